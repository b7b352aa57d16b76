//! Ansible's `now(utc=False, fmt=None)`: with `fmt` the time as text (Python's strftime, `%f` its
//! microseconds), without it a datetime as Python's is used in templates: printed as
//! `str(datetime)`, with `year`..`microsecond`, `strftime()`, `isoformat()`, `timestamp()`,
//! `weekday()` and `isoweekday()` (`now().year`, `now().strftime('%Y%m%d')`). The same datetime
//! from `to_datetime` (Python's strptime), and the `strftime` filter (time.strftime of now or
//! of epoch seconds). A datetime minus another (Python's timedelta) is not there: minijinja's
//! `-` takes numbers only, so `(a | to_datetime) - (b | to_datetime)` is an error, never a
//! number that is not the difference.

use std::sync::Arc;

use chrono::{Datelike, NaiveDateTime, Timelike};
use minijinja::value::{Kwargs, Object, ObjectRepr, Value, from_args};
use minijinja::{Environment, Error, ErrorKind, State};

#[derive(Debug)]
struct DateTime {
    naive: NaiveDateTime,
    timestamp: f64,
}

/// Python's strftime with `%f` its microseconds; a directive chrono does not know is an error,
/// not a panic (chrono's Display fails on one).
fn try_strftime(t: &NaiveDateTime, fmt: &str) -> Result<String, Error> {
    use std::fmt::Write;
    let mut out = String::new();
    write!(out, "{}", t.format(&fmt.replace("%f", "%6f")))
        .map_err(|_| Error::new(ErrorKind::InvalidOperation, format!("strftime: invalid format string {fmt:?}")))?;
    Ok(out)
}

/// Python's `time.strftime(fmt, t)`, for the template module's `ansible_managed`.
pub(super) fn python_strftime(t: &NaiveDateTime, fmt: &str) -> Result<String, Error> {
    try_strftime(t, fmt)
}

fn strftime(t: &NaiveDateTime, fmt: &str) -> String {
    try_strftime(t, fmt).unwrap_or_default()
}

impl Object for DateTime {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let t = &self.naive;
        Some(Value::from(match key.as_str()? {
            "year" => t.year() as i64,
            "month" => t.month() as i64,
            "day" => t.day() as i64,
            "hour" => t.hour() as i64,
            "minute" => t.minute() as i64,
            "second" => t.second() as i64,
            "microsecond" => (t.nanosecond() / 1000) as i64,
            _ => return None,
        }))
    }

    fn call_method(self: &Arc<Self>, _: &mut State<'_, '_>, method: &str, args: &[Value]) -> Result<Value, Error> {
        let t = &self.naive;
        match method {
            "strftime" => {
                let (fmt,): (String,) = from_args(args)?;
                Ok(Value::from(try_strftime(t, &fmt)?))
            }
            "isoformat" => {
                let () = from_args(args)?;
                let micro = if t.nanosecond() / 1000 == 0 { "" } else { ".%6f" };
                Ok(Value::from(strftime(t, &format!("%Y-%m-%dT%H:%M:%S{micro}"))))
            }
            "timestamp" => {
                let () = from_args(args)?;
                Ok(Value::from(self.timestamp))
            }
            "weekday" => {
                let () = from_args(args)?;
                Ok(Value::from(t.weekday().num_days_from_monday()))
            }
            "isoweekday" => {
                let () = from_args(args)?;
                Ok(Value::from(t.weekday().number_from_monday()))
            }
            _ => Err(Error::new(ErrorKind::UnknownMethod, format!("datetime has no method {method}"))),
        }
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let micro = if self.naive.nanosecond() / 1000 == 0 { "" } else { ".%6f" };
        f.write_str(&strftime(&self.naive, &format!("%Y-%m-%d %H:%M:%S{micro}")))
    }
}

/// Python's timedelta: microseconds, shown and taken apart as Python normalises them (`days`
/// may be negative, `seconds` is 0..86399).
#[derive(Debug)]
struct TimeDelta {
    micros: i64,
}

const DAY_MICROS: i64 = 86_400_000_000;

impl TimeDelta {
    fn parts(&self) -> (i64, i64, i64) {
        let days = self.micros.div_euclid(DAY_MICROS);
        let rest = self.micros.rem_euclid(DAY_MICROS);
        (days, rest / 1_000_000, rest % 1_000_000)
    }
}

impl Object for TimeDelta {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let (d, s, us) = self.parts();
        Some(Value::from(match key.as_str()? {
            "days" => d,
            "seconds" => s,
            "microseconds" => us,
            _ => return None,
        }))
    }

    fn call_method(self: &Arc<Self>, _: &mut State<'_, '_>, method: &str, args: &[Value]) -> Result<Value, Error> {
        match method {
            "total_seconds" => {
                let () = from_args(args)?;
                Ok(Value::from(self.micros as f64 / 1e6))
            }
            _ => Err(Error::new(ErrorKind::UnknownMethod, format!("timedelta has no method {method}"))),
        }
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (d, s, us) = self.parts();
        if d != 0 {
            write!(f, "{d} day{}, ", if d.abs() != 1 { "s" } else { "" })?;
        }
        write!(f, "{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)?;
        if us != 0 {
            write!(f, ".{us:06}")?;
        }
        Ok(())
    }
}

/// `a - b` where the text makes datetimes (rewrite.rs): a datetime minus a datetime is a
/// timedelta, minus a timedelta a datetime; numbers as minijinja's `-` has them.
fn subtract(a: Value, b: Value) -> Result<Value, Error> {
    let micros = |t: &NaiveDateTime| t.and_utc().timestamp_micros();
    if let Some(x) = a.downcast_object_ref::<DateTime>() {
        if let Some(y) = b.downcast_object_ref::<DateTime>() {
            return Ok(Value::from_object(TimeDelta { micros: micros(&x.naive) - micros(&y.naive) }));
        }
        if let Some(d) = b.downcast_object_ref::<TimeDelta>() {
            let naive = x.naive - chrono::TimeDelta::microseconds(d.micros);
            return Ok(Value::from_object(DateTime { timestamp: x.timestamp - d.micros as f64 / 1e6, naive }));
        }
    }
    if let (Some(x), Some(y)) = (a.downcast_object_ref::<TimeDelta>(), b.downcast_object_ref::<TimeDelta>()) {
        return Ok(Value::from_object(TimeDelta { micros: x.micros - y.micros }));
    }
    let unsupported = || {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("tried to use - operator on unsupported types {} and {}", a.kind(), b.kind()),
        )
    };
    match (a.kind(), b.kind()) {
        (minijinja::value::ValueKind::Number, minijinja::value::ValueKind::Number) => {
            if a.is_integer() && b.is_integer() {
                let (x, y) = (
                    i128::try_from(a.clone()).map_err(|_| unsupported())?,
                    i128::try_from(b.clone()).map_err(|_| unsupported())?,
                );
                let d = x.checked_sub(y).ok_or_else(unsupported)?;
                Ok(i64::try_from(d).map(Value::from).unwrap_or_else(|_| Value::from(d)))
            } else {
                let (x, y) = (
                    f64::try_from(a.clone()).map_err(|_| unsupported())?,
                    f64::try_from(b.clone()).map_err(|_| unsupported())?,
                );
                Ok(Value::from(x - y))
            }
        }
        _ => Err(unsupported()),
    }
}

/// `v` with every datetime in it as its isoformat() text, as Ansible's JSON encoder writes one.
pub fn iso_datetimes(v: Value) -> Value {
    use minijinja::value::ValueKind;
    if let Some(d) = v.downcast_object_ref::<DateTime>() {
        let micro = if d.naive.nanosecond() / 1000 == 0 { "" } else { ".%6f" };
        return Value::from(strftime(&d.naive, &format!("%Y-%m-%dT%H:%M:%S{micro}")));
    }
    match v.kind() {
        ValueKind::Seq => {
            Value::from(v.try_iter().map(|i| i.map(iso_datetimes).collect::<Vec<_>>()).unwrap_or_default())
        }
        ValueKind::Map => {
            let Ok(keys) = v.try_iter() else { return v };
            Value::from_object(
                keys.map(|k| {
                    let item = v.get_item(&k).unwrap_or_default();
                    (k, iso_datetimes(item))
                })
                .collect::<indexmap::IndexMap<_, _>>(),
            )
        }
        _ => v,
    }
}

/// Python's datetime.strptime: the fields `fmt` leaves out are 1900-01-01 00:00:00.
fn strptime(s: &str, fmt: &str) -> Option<NaiveDateTime> {
    use chrono::format::{Parsed, StrftimeItems, parse};
    let mut p = Parsed::new();
    parse(&mut p, s, StrftimeItems::new(fmt)).ok()?;
    let date = match p.to_naive_date() {
        Ok(d) => d,
        Err(_) => {
            let mut q = p.clone();
            if q.year().is_none() && q.year_mod_100().is_none() && q.isoyear().is_none() {
                q.set_year(1900).ok()?;
            }
            if q.month().is_none()
                && q.ordinal().is_none()
                && q.isoweek().is_none()
                && q.week_from_sun().is_none()
                && q.week_from_mon().is_none()
            {
                q.set_month(1).ok()?;
            }
            if q.day().is_none() && q.ordinal().is_none() && q.weekday().is_none() {
                q.set_day(1).ok()?;
            }
            q.to_naive_date().ok()?
        }
    };
    if p.hour_div_12().is_none() {
        match p.hour_mod_12() {
            None => p.set_hour(0).ok()?,
            // %I without %p is a morning hour.
            Some(_) => p.set_ampm(false).ok()?,
        }
    }
    if p.minute().is_none() {
        p.set_minute(0).ok()?;
    }
    if p.second().is_none() {
        p.set_second(0).ok()?;
    }
    Some(date.and_time(p.to_naive_time().ok()?))
}

/// A naive local time's POSIX timestamp, as Python's `datetime.timestamp()` reads one.
fn local_timestamp(naive: &NaiveDateTime) -> f64 {
    use chrono::TimeZone;
    chrono::Local
        .from_local_datetime(naive)
        .earliest()
        .map_or_else(|| naive.and_utc().timestamp_micros(), |t| t.timestamp_micros()) as f64
        / 1e6
}

pub fn add(env: &mut Environment<'static>) {
    // Ansible's `to_datetime(format='%Y-%m-%d %H:%M:%S')`: datetime.strptime.
    env.add_filter("to_datetime", |s: String, fmt: Option<String>| -> Result<Value, Error> {
        let fmt = fmt.unwrap_or_else(|| "%Y-%m-%d %H:%M:%S".into());
        // Python's %f takes one to six digits; chrono's `%.f` does after a dot.
        let naive = strptime(&s, &fmt.replace(".%f", "%.f").replace("%f", "%6f")).ok_or_else(|| {
            Error::new(ErrorKind::InvalidOperation, format!("time data '{s}' does not match format '{fmt}'"))
        })?;
        Ok(Value::from_object(DateTime { timestamp: local_timestamp(&naive), naive }))
    });
    // Ansible's `strftime(second=None, utc=False)`: the format applied to now or to the epoch
    // seconds given, local time unless `utc`.
    env.add_filter("strftime", |fmt: String, second: Option<Value>, kw: Kwargs| -> Result<String, Error> {
        let utc: bool = kw.get::<Option<bool>>("utc")?.unwrap_or(false);
        let second: Option<Value> = second.or(kw.get("second")?);
        kw.assert_all_used()?;
        let at = match second.filter(|s| !s.is_none()) {
            None => chrono::Utc::now(),
            Some(v) => {
                let secs = f64::try_from(v.clone())
                    .ok()
                    .or_else(|| v.as_str().and_then(|t| t.trim().parse::<f64>().ok()))
                    .ok_or_else(|| {
                        Error::new(ErrorKind::InvalidOperation, format!("Invalid value for epoch value ({v})"))
                    })?;
                // time.localtime() drops the fraction.
                chrono::DateTime::from_timestamp(secs.trunc() as i64, 0).ok_or_else(|| {
                    Error::new(ErrorKind::InvalidOperation, format!("Invalid value for epoch value ({v})"))
                })?
            }
        };
        let naive = if utc { at.naive_utc() } else { at.with_timezone(&chrono::Local).naive_local() };
        try_strftime(&naive, &fmt)
    });
    env.add_function(super::rewrite::SUB, subtract);
    env.add_function("now", |kw: Kwargs| -> Result<Value, Error> {
        let utc: bool = kw.get::<Option<bool>>("utc")?.unwrap_or(false);
        let fmt: Option<String> = kw.get("fmt")?;
        kw.assert_all_used()?;
        let now = chrono::Utc::now();
        let naive = if utc { now.naive_utc() } else { now.with_timezone(&chrono::Local).naive_local() };
        let timestamp = now.timestamp_micros() as f64 / 1e6;
        Ok(match fmt {
            Some(fmt) => Value::from(try_strftime(&naive, &fmt)?),
            None => Value::from_object(DateTime { naive, timestamp }),
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_a_datetime_as_pythons_is_used_in_templates() {
        let mut env = Environment::new();
        add(&mut env);
        let r = |t: &str| env.render_str(t, minijinja::context! {}).unwrap();
        let year = chrono::Utc::now().year();
        assert!((year - 1..=year + 1).contains(&r("{{ now(utc=true).year }}").parse::<i32>().unwrap()));
        assert_eq!(r("{{ now().strftime('%Y') | int == now().year }}"), "True");
        let printed = r("{{ now(utc=true) }}");
        assert!(
            regex::Regex::new(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?$").unwrap().is_match(&printed),
            "{printed}"
        );
        assert!(regex::Regex::new(r"^\d{4}-\d\d-\d\dT").unwrap().is_match(&r("{{ now().isoformat() }}")));
        assert_eq!(r("{{ now(fmt='%Y') | length }}"), "4");
        assert_eq!(r("{{ now().isoweekday() - now().weekday() }}"), "1");
    }

    #[test]
    fn datetimes_parse_subtract_and_print_as_pythons_do() {
        let mut env = Environment::new();
        add(&mut env);
        let r = |t: &str| {
            let t = crate::template::rewrite::apply_default(t, false).into_owned();
            env.render_str(&t, minijinja::context! {})
                .unwrap_or_else(|e| format!("error: {}", e.detail().unwrap_or("")))
        };
        assert_eq!(r("{{ '2024-02-01 12:30:00' | to_datetime }}"), "2024-02-01 12:30:00");
        assert_eq!(r("{{ ('05/03/24' | to_datetime('%d/%m/%y')).month }}"), "3");
        assert_eq!(
            r(
                "{{ ('2024-03-01' | to_datetime('%Y-%m-%d')) - ('2024-02-29 23:59:58.5' | to_datetime('%Y-%m-%d %H:%M:%S.%f')) }}"
            ),
            "0:00:01.500000"
        );
        assert_eq!(
            r("{{ (('2024-01-01' | to_datetime('%Y-%m-%d')) - ('2024-01-03' | to_datetime('%Y-%m-%d'))).days }}"),
            "-2"
        );
        assert_eq!(
            r("{{ ('2024-01-01' | to_datetime('%Y-%m-%d')) - ('2024-01-03' | to_datetime('%Y-%m-%d')) }}"),
            "-2 days, 0:00:00"
        );
        assert_eq!(r("{{ '%Y' | strftime(0, utc=true) }}"), "1970");
        assert_eq!(r("{{ 'x' | to_datetime }}"), "error: time data 'x' does not match format '%Y-%m-%d %H:%M:%S'");
        assert_eq!(r("{{ '%Q' | strftime(0) }}"), "error: strftime: invalid format string \"%Q\"");
        assert_eq!(
            r("{{ now() - 'a' }}"),
            "error: tried to use - operator on unsupported types plain object and string"
        );
    }
}
