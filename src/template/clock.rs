//! Ansible's `now(utc=False, fmt=None)`: with `fmt` the time as text (Python's strftime, `%f` its
//! microseconds), without it a datetime as Python's is used in templates: printed as
//! `str(datetime)`, with `year`..`microsecond`, `strftime()`, `isoformat()`, `timestamp()`,
//! `weekday()` and `isoweekday()` (`now().year`, `now().strftime('%Y%m%d')`).

use std::sync::Arc;

use chrono::{Datelike, NaiveDateTime, Timelike};
use minijinja::value::{Kwargs, Object, ObjectRepr, Value, from_args};
use minijinja::{Environment, Error, ErrorKind, State};

#[derive(Debug)]
struct DateTime {
    naive: NaiveDateTime,
    timestamp: f64,
}

fn strftime(t: &NaiveDateTime, fmt: &str) -> String {
    t.format(&fmt.replace("%f", "%6f")).to_string()
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
                Ok(Value::from(strftime(t, &fmt)))
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

pub fn add(env: &mut Environment<'static>) {
    env.add_function("now", |kw: Kwargs| -> Result<Value, Error> {
        let utc: bool = kw.get::<Option<bool>>("utc")?.unwrap_or(false);
        let fmt: Option<String> = kw.get("fmt")?;
        kw.assert_all_used()?;
        let now = chrono::Utc::now();
        let naive = if utc { now.naive_utc() } else { now.with_timezone(&chrono::Local).naive_local() };
        let timestamp = now.timestamp_micros() as f64 / 1e6;
        Ok(match fmt {
            Some(fmt) => Value::from(strftime(&naive, &fmt)),
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
}
