//! The run's start time, formatted with a strftime pattern (the tree's
//! `dateformat`). Only the specifiers a date format for file names needs;
//! anything else is copied as written.

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
];

/// Format a UTC instant with a strftime pattern.
pub fn strftime(unix: i64, pattern: &str) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let wd = days.rem_euclid(7) as usize;
    let yday = days - days_from_civil(y, 1, 1) + 1;
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&format!("{y:04}")),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{mo:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('H') => out.push_str(&format!("{h:02}")),
            Some('I') => out.push_str(&format!("{:02}", if h % 12 == 0 { 12 } else { h % 12 })),
            Some('p') => out.push_str(if h < 12 { "AM" } else { "PM" }),
            Some('M') => out.push_str(&format!("{mi:02}")),
            Some('S') => out.push_str(&format!("{s:02}")),
            Some('j') => out.push_str(&format!("{yday:03}")),
            Some('B') => out.push_str(MONTHS[(mo - 1) as usize]),
            Some('b') => out.push_str(&MONTHS[(mo - 1) as usize][..3]),
            Some('A') => out.push_str(DAYS[wd]),
            Some('a') => out.push_str(&DAYS[wd][..3]),
            Some('Z') => out.push_str("UTC"),
            Some('z') => out.push_str("+0000"),
            Some('s') => out.push_str(&unix.to_string()),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The ISO date (YYYY-MM-DD) and time of an instant.
pub fn iso_date(unix: i64) -> String {
    strftime(unix, "%Y-%m-%d")
}

pub fn iso_datetime(unix: i64) -> String {
    strftime(unix, "%Y-%m-%dT%H:%M:%S+00:00")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_the_default_dateformat() {
        // 2026-12-02T15:53:24Z
        let t = 1_796_226_804;
        assert_eq!(strftime(t, "%Y%m%d_%H%M%S"), "20261202_155324");
        assert_eq!(iso_date(t), "2026-12-02");
        assert_eq!(strftime(t, "%a %b %j %%"), "Wed Dec 336 %");
        assert_eq!(strftime(0, "%Y-%m-%d %A"), "1970-01-01 Thursday");
    }
}
