//! When a CronJob's schedule fires. The schedule is parsed by the parser the API server
//! validates with (robfig/cron v3's `ParseStandard`, in `kgc_validation`), so what the API
//! admits the controller runs; the times follow robfig/cron `spec.go` (`SpecSchedule.Next`) and
//! `constantdelay.go`, in the CronJob's time zone from jiff's database (the machine's, else the
//! bundled copy, as Go's `time/tzdata` fallback). The missed-start arithmetic is
//! `kubernetes/kubernetes pkg/controller/cronjob/utils.go` (`mostRecentScheduleTime`).

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ToSpan};
use kgc_validation::{CRON_STAR_BIT, CronSchedule, parse_cron};

/// More missed start times than this and upstream warns of clock skew (`TooManyMissedTimes`).
const MANY_MISSED: i64 = 100;

/// The five fields' bit sets (bit `n` set: value `n` matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bits {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Spec(Bits),
    /// `@every`: a fixed delay of whole seconds.
    Every(SignedDuration),
}

/// A parsed schedule in its time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
    tz: TimeZone,
}

/// How many start times were missed (upstream `missedSchedulesType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    Few,
    Many,
}

/// Go's `time.LoadLocation`: `""` and `UTC` are UTC, `Local` the machine's zone, any other name
/// an IANA zone (case-sensitive); the error is Go's text.
pub fn location(name: &str) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" => Ok(TimeZone::UTC),
        "Local" => Ok(TimeZone::system()),
        _ => TimeZone::get(name)
            .ok()
            .filter(|tz| tz.iana_name() == Some(name))
            .ok_or_else(|| format!("unknown time zone {name}")),
    }
}

/// All of `min..=max`, written as `*`.
fn star(min: u32, max: u32) -> u64 {
    (min..=max).fold(CRON_STAR_BIT, |b, i| b | 1 << i)
}

impl Schedule {
    /// Parses `spec` (upstream `cron.ParseStandard`) to run in `tz`, unless the spec names its
    /// own zone with a `TZ=`/`CRON_TZ=` prefix (only CronJobs older than that rule keep one).
    pub fn parse(spec: &str, tz: TimeZone) -> Result<Schedule, String> {
        let parsed = parse_cron(spec)?;
        let tz = match spec.strip_prefix("CRON_TZ=").or(spec.strip_prefix("TZ=")) {
            Some(rest) => location(rest.split(' ').next().unwrap_or_default())?,
            None => tz,
        };
        let all_days = star(1, 31);
        let (all_months, all_weekdays) = (star(1, 12), star(0, 6));
        let midnight = |dom, month, dow| Bits {
            minute: 1,
            hour: 1,
            dom,
            month,
            dow,
        };
        let kind = match parsed {
            CronSchedule::Spec {
                minute,
                hour,
                dom,
                month,
                dow,
            } => Kind::Spec(Bits {
                minute,
                hour,
                dom,
                month,
                dow,
            }),
            // robfig/cron `Every`: at least a second, rounded down to whole seconds.
            CronSchedule::Every(ns) => {
                let secs = (ns / 1_000_000_000).max(1);
                Kind::Every(SignedDuration::from_secs(secs))
            }
            // robfig/cron `parseDescriptor`.
            CronSchedule::Descriptor(d) => Kind::Spec(match d {
                "@yearly" | "@annually" => midnight(1 << 1, 1 << 1, all_weekdays),
                "@monthly" => midnight(1 << 1, all_months, all_weekdays),
                "@weekly" => midnight(all_days, all_months, 1),
                "@hourly" => Bits {
                    minute: 1,
                    hour: star(0, 23),
                    dom: all_days,
                    month: all_months,
                    dow: all_weekdays,
                },
                // @daily, @midnight
                _ => midnight(all_days, all_months, all_weekdays),
            }),
        };
        Ok(Schedule { kind, tz })
    }

    /// The first activation strictly after `t` (robfig/cron `Next`); `None` when none comes
    /// within five years (a day that never exists, `0 0 30 2 *`).
    pub fn next(&self, t: Timestamp) -> Option<Timestamp> {
        let subsec = SignedDuration::from_nanos(i64::from(t.subsec_nanosecond()));
        match &self.kind {
            Kind::Every(delay) => t.checked_add(*delay - subsec).ok(),
            Kind::Spec(bits) => {
                let upcoming = t.checked_add(SignedDuration::from_secs(1) - subsec).ok()?;
                next_spec(bits, &self.tz, upcoming)
            }
        }
    }

    /// Upstream `mostRecentScheduleTime` from `earliest` (the last schedule time, or the
    /// CronJob's creation, or the starting deadline's start): the latest activation not after
    /// `now`, if any, and how many were missed; an error for a schedule whose activations are
    /// not a second apart or never come.
    pub fn most_recent(
        &self,
        earliest: Timestamp,
        now: Timestamp,
    ) -> Result<(Option<Timestamp>, Missed), String> {
        const NEVER: &str = "time difference between two schedules is less than 1 second";
        let t1 = self.next(earliest).ok_or(NEVER)?;
        if now < t1 {
            return Ok((None, Missed::None));
        }
        let t2 = self.next(t1).ok_or(NEVER)?;
        if now < t2 {
            return Ok((Some(t1), Missed::None));
        }
        let between = t2.duration_since(t1).round(jiff::Unit::Second).ok();
        let between = between.map_or(0, |d| d.as_secs());
        if between < 1 {
            return Err(NEVER.to_owned());
        }
        // An estimate of the count from the interval between the first two, as upstream
        // makes it; then the exact latest time, searched from one interval before it.
        let missed = now.duration_since(t1).as_secs() / between + 1;
        let from = t1
            .checked_add(SignedDuration::from_secs((missed - 2) * between))
            .ok();
        let mut latest = None;
        let mut t = from.and_then(|f| self.next(f));
        while let Some(at) = t.filter(|at| *at <= now) {
            latest = Some(at);
            t = self.next(at);
        }
        let missed = if missed > MANY_MISSED {
            Missed::Many
        } else {
            Missed::Few
        };
        Ok((latest, missed))
    }
}

/// robfig/cron `SpecSchedule.Next` from `t`, the upcoming whole second: finds the month, the
/// day, the hour and the minute in turn, each step resetting the finer fields once, in the
/// schedule's zone (wall-clock dates that do not exist or exist twice resolve to the earlier
/// instant, as Go's `time.Date` does).
fn next_spec(b: &Bits, tz: &TimeZone, mut t: Timestamp) -> Option<Timestamp> {
    let bit = |set: u64, v: i8| set & (1 << v) != 0;
    let mut added = false;
    let year_limit = t.to_zoned(tz.clone()).year() + 5;
    'wrap: loop {
        let mut z = t.to_zoned(tz.clone());
        if z.year() > year_limit {
            return None;
        }
        while !bit(b.month, z.month()) {
            if !added {
                added = true;
                t = wall(tz, z.year(), z.month(), 1, 0, 0)?;
            }
            t = add_date(tz, t, 1, 0)?;
            z = t.to_zoned(tz.clone());
            if z.month() == 1 {
                continue 'wrap;
            }
        }
        while !day_matches(b, &z) {
            if !added {
                added = true;
                t = wall(tz, z.year(), z.month(), z.day(), 0, 0)?;
            }
            t = add_date(tz, t, 0, 1)?;
            z = t.to_zoned(tz.clone());
            // Midnight skipped by a DST change lands at 23:00 or 01:00: back to midnight.
            let hour = i64::from(z.hour());
            if hour != 0 {
                let shift = if hour > 12 { 24 - hour } else { -hour };
                t = t.checked_add(SignedDuration::from_hours(shift)).ok()?;
                z = t.to_zoned(tz.clone());
            }
            if z.day() == 1 {
                continue 'wrap;
            }
        }
        while !bit(b.hour, z.hour()) {
            if !added {
                added = true;
                t = wall(tz, z.year(), z.month(), z.day(), z.hour(), 0)?;
            }
            t = t.checked_add(SignedDuration::from_hours(1)).ok()?;
            z = t.to_zoned(tz.clone());
            if z.hour() == 0 {
                continue 'wrap;
            }
        }
        while !bit(b.minute, z.minute()) {
            if !added {
                added = true;
                t = Timestamp::from_second(t.as_second() - t.as_second().rem_euclid(60)).ok()?;
            }
            t = t.checked_add(SignedDuration::from_mins(1)).ok()?;
            z = t.to_zoned(tz.clone());
            if z.minute() == 0 {
                continue 'wrap;
            }
        }
        // The standard parser's seconds field is `0`.
        if z.second() != 0 {
            let to_minute = 60 - t.as_second().rem_euclid(60);
            t = t.checked_add(SignedDuration::from_secs(to_minute)).ok()?;
            added = true;
            continue 'wrap;
        }
        return Some(t);
    }
}

/// robfig/cron `dayMatches`: with `*` in either day field both must match, else either.
fn day_matches(b: &Bits, z: &jiff::Zoned) -> bool {
    let dom = b.dom & (1 << z.day()) != 0;
    let dow = b.dow & (1 << z.weekday().to_sunday_zero_offset()) != 0;
    if b.dom & CRON_STAR_BIT != 0 || b.dow & CRON_STAR_BIT != 0 {
        dom && dow
    } else {
        dom || dow
    }
}

/// Go's `time.Date(year, month, day, hour, minute, 0, 0, tz)`: a month or day past the end
/// carries into the next; a wall time that is skipped or repeated is the earlier instant.
fn wall(tz: &TimeZone, year: i16, month: i8, day: i8, hour: i8, minute: i8) -> Option<Timestamp> {
    let months = i32::from(year) * 12 + i32::from(month) - 1;
    let y = i16::try_from(months.div_euclid(12)).ok()?;
    let m = i8::try_from(months.rem_euclid(12) + 1).ok()?;
    let date = Date::new(y, m, 1)
        .ok()?
        .checked_add((i64::from(day) - 1).days())
        .ok()?;
    tz.to_ambiguous_timestamp(date.at(hour, minute, 0, 0))
        .earlier()
        .ok()
}

/// Go's `t.AddDate(0, months, days)` in `tz`.
fn add_date(tz: &TimeZone, t: Timestamp, months: i8, days: i8) -> Option<Timestamp> {
    let z = t.to_zoned(tz.clone());
    let months = i32::from(z.month()) + i32::from(months);
    let (year, month) = (
        i16::try_from(i32::from(z.year()) + (months - 1).div_euclid(12)).ok()?,
        i8::try_from((months - 1).rem_euclid(12) + 1).ok()?,
    );
    let dt = Date::new(year, month, 1)
        .ok()?
        .checked_add((i64::from(z.day()) - 1 + i64::from(days)).days())
        .ok()?;
    tz.to_ambiguous_timestamp(dt.at(z.hour(), z.minute(), z.second(), 0))
        .earlier()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn utc(spec: &str) -> Schedule {
        Schedule::parse(spec, TimeZone::UTC).unwrap()
    }

    /// robfig/cron `spec_test.go` `TestNext` (the five-field cases; times UTC).
    #[test]
    fn test_next() {
        let cases = [
            (
                "2012-07-09T14:45:00Z",
                "0/15 * * * *",
                "2012-07-09T15:00:00Z",
            ),
            (
                "2012-07-09T14:59:00Z",
                "0/15 * * * *",
                "2012-07-09T15:00:00Z",
            ),
            (
                "2012-07-09T14:59:59Z",
                "0/15 * * * *",
                "2012-07-09T15:00:00Z",
            ),
            // Wrap around hours, days, months, years.
            (
                "2012-07-09T15:45:00Z",
                "20-35/15 * * * *",
                "2012-07-09T16:20:00Z",
            ),
            (
                "2012-07-09T23:46:00Z",
                "*/15 * * * *",
                "2012-07-10T00:00:00Z",
            ),
            (
                "2012-07-09T23:45:00Z",
                "20-35/15 * * * *",
                "2012-07-10T00:20:00Z",
            ),
            (
                "2012-07-09T23:35:51Z",
                "20-35/15 * * 7 *",
                "2012-07-10T00:20:00Z",
            ),
            (
                "2012-07-09T23:35:51Z",
                "20-35/15 * * 8 *",
                "2012-08-01T00:20:00Z",
            ),
            (
                "2012-07-09T23:35:51Z",
                "20-35/15 * 9 7 *",
                "2013-07-09T00:20:00Z",
            ),
            ("2012-12-31T21:00:00Z", "0 * * * *", "2012-12-31T22:00:00Z"),
            // Leap year.
            (
                "2012-07-09T23:35:00Z",
                "0 0 29 Feb ?",
                "2016-02-29T00:00:00Z",
            ),
            // Day of month and day of week both restricted: either matches.
            (
                "2012-07-09T23:35:00Z",
                "0 0 1 * Mon",
                "2012-07-16T00:00:00Z",
            ),
            (
                "2012-07-09T23:35:00Z",
                "0 0 1 * Sun",
                "2012-07-15T00:00:00Z",
            ),
            // Unsatisfiable.
            ("2012-07-09T23:35:00Z", "0 0 30 Feb ?", ""),
            ("2012-07-09T23:35:00Z", "0 0 31 Apr ?", ""),
        ];
        for (from, spec, want) in cases {
            let got = utc(spec).next(at(from));
            let want = (!want.is_empty()).then(|| at(want));
            assert_eq!(got, want, "{spec} after {from}");
        }
    }

    #[test]
    fn descriptors_every_and_names() {
        let t = at("2024-05-15T10:20:30.5Z");
        assert_eq!(utc("@hourly").next(t), Some(at("2024-05-15T11:00:00Z")));
        assert_eq!(utc("@daily").next(t), Some(at("2024-05-16T00:00:00Z")));
        assert_eq!(utc("@midnight").next(t), Some(at("2024-05-16T00:00:00Z")));
        // 2024-05-19 is a Sunday.
        assert_eq!(utc("@weekly").next(t), Some(at("2024-05-19T00:00:00Z")));
        assert_eq!(utc("@monthly").next(t), Some(at("2024-06-01T00:00:00Z")));
        assert_eq!(utc("@yearly").next(t), Some(at("2025-01-01T00:00:00Z")));
        assert_eq!(utc("@annually").next(t), Some(at("2025-01-01T00:00:00Z")));
        assert_eq!(utc("@every 90s").next(t), Some(at("2024-05-15T10:22:00Z")));
        assert_eq!(
            utc("30 9 * jan-JUN mon-fri").next(t),
            Some(at("2024-05-16T09:30:00Z"))
        );
        assert_eq!(
            utc("0 0,12 * * *").next(t),
            Some(at("2024-05-15T12:00:00Z"))
        );
        // An activation exactly at `t` is not after it.
        assert_eq!(
            utc("* * * * *").next(at("2024-05-15T10:20:00Z")),
            Some(at("2024-05-15T10:21:00Z"))
        );
    }

    #[test]
    fn parse_errors_are_upstreams() {
        assert_eq!(
            Schedule::parse("* * * *", TimeZone::UTC).unwrap_err(),
            "expected exactly 5 fields, found 4: [* * * *]"
        );
        assert_eq!(
            Schedule::parse("0 0 * * 7", TimeZone::UTC).unwrap_err(),
            "end of range (7) above maximum (6): 7"
        );
        assert_eq!(
            location("Mars/Olympus").unwrap_err(),
            "unknown time zone Mars/Olympus"
        );
        assert!(location("America/New_York").is_ok());
    }

    /// Time zones: the schedule runs on the zone's wall clock, through DST changes.
    #[test]
    fn time_zones_and_daylight_saving() {
        let ny = || location("America/New_York").unwrap();
        let daily_9 = Schedule::parse("0 9 * * *", ny()).unwrap();
        // 09:00 EST is 14:00Z; after the March change 09:00 EDT is 13:00Z.
        assert_eq!(
            daily_9.next(at("2024-03-09T15:00:00Z")),
            Some(at("2024-03-10T13:00:00Z"))
        );
        assert_eq!(
            daily_9.next(at("2024-03-08T15:00:00Z")),
            Some(at("2024-03-09T14:00:00Z"))
        );
        // 02:30 does not exist on 2024-03-10 in New York: the next is the 11th.
        let at_0230 = Schedule::parse("30 2 * * *", ny()).unwrap();
        assert_eq!(
            at_0230.next(at("2024-03-10T05:00:00Z")),
            Some(at("2024-03-11T06:30:00Z"))
        );
        // 01:30 happens twice on 2024-11-03: the first (EDT), then the second (EST) too,
        // as robfig/cron's hour-by-hour search finds both.
        let at_0130 = Schedule::parse("30 1 * * *", ny()).unwrap();
        let first = at_0130.next(at("2024-11-03T04:00:00Z")).unwrap();
        assert_eq!(first, at("2024-11-03T05:30:00Z"));
        assert_eq!(at_0130.next(first), Some(at("2024-11-03T06:30:00Z")));
        // A `TZ=` prefix names the zone itself.
        let prefixed = Schedule::parse("CRON_TZ=Asia/Tokyo 0 9 * * *", TimeZone::UTC).unwrap();
        assert_eq!(
            prefixed.next(at("2024-01-01T00:30:00Z")),
            Some(at("2024-01-02T00:00:00Z"))
        );
    }

    /// Upstream `TestMostRecentScheduleTime`'s shapes.
    #[test]
    fn most_recent_schedule_time() {
        let hourly = utc("0 * * * *");
        let created = at("2024-01-01T10:30:00Z");
        assert_eq!(
            hourly.most_recent(created, at("2024-01-01T10:59:00Z")),
            Ok((None, Missed::None))
        );
        assert_eq!(
            hourly.most_recent(created, at("2024-01-01T11:10:00Z")),
            Ok((Some(at("2024-01-01T11:00:00Z")), Missed::None))
        );
        assert_eq!(
            hourly.most_recent(created, at("2024-01-01T14:10:00Z")),
            Ok((Some(at("2024-01-01T14:00:00Z")), Missed::Few))
        );
        // Five days of hourly runs: more than 100 missed.
        assert_eq!(
            hourly.most_recent(created, at("2024-01-06T10:10:00Z")),
            Ok((Some(at("2024-01-06T10:00:00Z")), Missed::Many))
        );
        // An irregular schedule still finds the exact latest time.
        let weekdays = utc("30 6-16/4 * * 1-5");
        assert_eq!(
            weekdays.most_recent(at("2024-01-05T00:00:00Z"), at("2024-01-08T12:00:00Z")),
            Ok((Some(at("2024-01-08T10:30:00Z")), Missed::Few))
        );
        assert_eq!(
            utc("59 23 31 2 *").most_recent(created, at("2024-03-01T00:00:00Z")),
            Err("time difference between two schedules is less than 1 second".to_owned())
        );
    }
}
