//! Ansible's `random` and `shuffle` filters, with `seed=` giving what Python's `random.Random(seed)`
//! gives (Mersenne Twister, seeded as CPython seeds it, `randrange`/`choice`/`shuffle` drawing as
//! CPython draws): `59 | random(seed=inventory_hostname)` must pick the same cron minute on a host
//! under copctl as under Ansible, or a site's crontab changes when it moves over.

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};
use rand_mt::Mt;
use sha2::Digest;

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// CPython's `Random(seed)`: a text seed is its UTF-8 with its SHA-512 appended, read as one
/// big-endian integer (`seed(version=2)`); an integer its absolute value. The integer's 32-bit
/// words, least significant first, are the key of `init_by_array`.
fn python_random(seed: &Value) -> Result<Mt, Error> {
    let be: Vec<u8> = match seed.kind() {
        ValueKind::String => {
            let text = seed.as_str().unwrap_or_default().as_bytes();
            let mut b = text.to_vec();
            b.extend_from_slice(&sha2::Sha512::digest(text));
            b
        }
        ValueKind::Number if seed.as_i64().is_some() => {
            seed.as_i64().unwrap_or_default().unsigned_abs().to_be_bytes().to_vec()
        }
        _ => return Err(bad(format!("random: a seed is text or an integer, not {seed}"))),
    };
    let mut le: Vec<u8> = be.into_iter().skip_while(|&b| b == 0).collect();
    le.reverse();
    let mut key: Vec<u32> =
        le.chunks(4).map(|c| c.iter().enumerate().fold(0u32, |w, (i, &b)| w | (u32::from(b) << (8 * i)))).collect();
    if key.is_empty() {
        key.push(0);
    }
    Ok(Mt::new_with_key(key))
}

/// A generator seeded from the OS, for no `seed` (Ansible's SystemRandom).
fn os_random() -> Result<Mt, Error> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| bad(format!("random: no randomness from the OS: {e}")))?;
    Ok(Mt::new_with_key(b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))))
}

/// CPython's `getrandbits(k)` for k <= 64: 32-bit words, least significant first, the last one's
/// low bits dropped.
fn getrandbits(r: &mut Mt, k: u32) -> u64 {
    let (mut out, mut left, mut shift) = (0u64, k, 0);
    while left > 0 {
        let mut w = u64::from(r.next_u32());
        if left < 32 {
            w >>= 32 - left;
        }
        out |= w << shift;
        shift += 32;
        left = left.saturating_sub(32);
    }
    out
}

/// CPython's `_randbelow_with_getrandbits(n)`.
fn below(r: &mut Mt, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let k = 64 - n.leading_zeros();
    loop {
        let x = getrandbits(r, k);
        if x < n {
            return x;
        }
    }
}

/// CPython's `randrange(start, stop, step)`.
fn randrange(r: &mut Mt, start: i64, stop: i64, step: i64) -> Result<i64, Error> {
    let width = stop - start;
    let n = match step {
        1 if width > 0 => width,
        1 => return Err(bad(format!("random: empty range in randrange({start}, {stop})"))),
        0 => return Err(bad("random: zero step for randrange()")),
        s if s > 0 => (width + s - 1).div_euclid(s),
        s => (width + s + 1).div_euclid(s),
    };
    if n <= 0 {
        return Err(bad("random: empty range for randrange()"));
    }
    Ok(start + step * below(r, n as u64) as i64)
}

fn generator(kw: &Kwargs) -> Result<Mt, Error> {
    match kw.get::<Option<Value>>("seed")? {
        Some(seed) if !seed.is_none() => python_random(&seed),
        _ => os_random(),
    }
}

pub fn add(env: &mut Environment<'static>) {
    // Ansible's `random(end, start=None, step=None, seed=None)`: a number in range(start, end,
    // step) for an integer, one element for a list (or a character for a text).
    env.add_filter(
        "random",
        |end: Value, start: Option<Value>, step: Option<Value>, kw: Kwargs| -> Result<Value, Error> {
            let start = start.or(kw.get::<Option<Value>>("start")?).filter(|v| v.is_true());
            let step = step.or(kw.get::<Option<Value>>("step")?).filter(|v| v.is_true());
            let mut r = generator(&kw)?;
            kw.assert_all_used()?;
            if end.kind() == ValueKind::Number {
                let int = |v: &Value, name: &str| {
                    v.as_i64().ok_or_else(|| bad(format!("random: {name} is an integer, not {v}")))
                };
                let end = int(&end, "the end")?;
                let start = start.as_ref().map(|v| int(v, "start")).transpose()?.unwrap_or(0);
                let step = step.as_ref().map(|v| int(v, "step")).transpose()?.unwrap_or(1);
                return Ok(Value::from(randrange(&mut r, start, end, step)?));
            }
            if start.is_some() || step.is_some() {
                return Err(bad("random: start and step can only be used with integer values"));
            }
            let seq: Vec<Value> = match end.as_str() {
                Some(s) => s.chars().map(|c| Value::from(c.to_string())).collect(),
                None if matches!(end.kind(), ValueKind::Seq | ValueKind::Map | ValueKind::Iterable) => {
                    end.try_iter()?.collect()
                }
                None => return Err(bad("random: can only be used on sequences and integers")),
            };
            if seq.is_empty() {
                return Err(bad("random: cannot choose from an empty sequence"));
            }
            let i = below(&mut r, seq.len() as u64) as usize;
            Ok(seq[i].clone())
        },
    );
    // Ansible's `shuffle(seed=None)`: CPython's `Random.shuffle` on a copy of the list.
    env.add_filter("shuffle", |v: Value, kw: Kwargs| -> Result<Value, Error> {
        let mut r = generator(&kw)?;
        kw.assert_all_used()?;
        let mut items: Vec<Value> = v.try_iter()?.collect();
        for i in (1..items.len()).rev() {
            let j = below(&mut r, i as u64 + 1) as usize;
            items.swap(i, j);
        }
        Ok(Value::from(items))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &str) -> String {
        let mut env = Environment::new();
        add(&mut env);
        env.render_str(t, minijinja::context! {}).unwrap()
    }

    // Each expected value is what Python 3 prints for the same draw:
    // `random.Random(42).getrandbits(32)`, `random.Random(h).randrange(0, 60)`, ...
    #[test]
    fn seeded_draws_are_cpythons() {
        assert_eq!(getrandbits(&mut python_random(&Value::from(42)).unwrap(), 32), 2746317213);
        let minutes: Vec<String> = ["cop-worker-3", "node1", "한글", ""]
            .iter()
            .map(|h| render(&format!("{{{{ 60 | random(seed='{h}') }}}}")))
            .collect();
        assert_eq!(minutes, ["9", "36", "10", "29"]);
        assert_eq!(render("{{ 100 | random(10, 7, seed='x') }}"), "80");
        assert_eq!(render("{{ ['a','b','c','d'] | random(seed=7) }}"), "c");
        assert_eq!(render("{{ 1099511627776 | random(seed=-5) }}"), "561021090885");
        assert_eq!(render("{{ range(10) | shuffle(seed='s') | join(',') }}"), "3,2,1,4,8,0,6,5,9,7");
        assert_eq!(render("{{ 'hello' | random(seed='abc') }}"), "o");
    }
}
