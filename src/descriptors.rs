//! The process's limit on open files: raised to the hard limit at start (one connection per host
//! is kept while the host has tasks: a thousand hosts need more than the common soft limit of
//! 1024, and the hard limit is ours to take), read by what keeps files open beside them.

fn limit() -> Option<libc::rlimit> {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` through a pointer to a live, initialised local; it
    // has no other effect.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0).then_some(l)
}

/// Raises the soft limit to the hard one.
pub fn raise() {
    if let Some(mut l) = limit()
        && l.rlim_cur < l.rlim_max
    {
        l.rlim_cur = l.rlim_max;
        // SAFETY: setrlimit only reads the `rlimit` behind a valid reference; raising the soft
        // limit up to the hard one needs no privilege, and a failure leaves the old limit.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) };
    }
}

/// How many files the process may have open (1024 where the limit cannot be read).
pub fn soft() -> usize {
    limit().map_or(1024, |l| usize::try_from(l.rlim_cur).unwrap_or(usize::MAX))
}
