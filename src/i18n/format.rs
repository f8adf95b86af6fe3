//! Dates, numbers and plurals per locale, from the CLDR's data for each language
//! (medium dates with abbreviated months, 24-hour times in UTC, the grouping and
//! decimal separators, the one/other plural rule).

use std::borrow::Borrow;

use super::{Locale, Messages};

/// Abbreviated month names, January first (CLDR "format abbreviated").
fn months(locale: Locale) -> [&'static str; 12] {
    match locale {
        Locale::En => [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ],
        Locale::De => [
            "Jan.", "Feb.", "März", "Apr.", "Mai", "Juni", "Juli", "Aug.", "Sept.", "Okt.", "Nov.", "Dez.",
        ],
        Locale::Fr => [
            "janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.", "déc.",
        ],
        Locale::Es => [
            "ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic",
        ],
        Locale::It => [
            "gen", "feb", "mar", "apr", "mag", "giu", "lug", "ago", "set", "ott", "nov", "dic",
        ],
        Locale::Nl => [
            "jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec",
        ],
        Locale::Pt => [
            "jan.", "fev.", "mar.", "abr.", "mai.", "jun.", "jul.", "ago.", "set.", "out.", "nov.", "dez.",
        ],
    }
}

/// Abbreviated weekday names, Monday first (CLDR "format abbreviated").
fn weekdays(locale: Locale) -> [&'static str; 7] {
    match locale {
        Locale::En => ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"],
        Locale::De => ["Mo.", "Di.", "Mi.", "Do.", "Fr.", "Sa.", "So."],
        Locale::Fr => ["lun.", "mar.", "mer.", "jeu.", "ven.", "sam.", "dim."],
        Locale::Es => ["lun", "mar", "mié", "jue", "vie", "sáb", "dom"],
        Locale::It => ["lun", "mar", "mer", "gio", "ven", "sab", "dom"],
        Locale::Nl => ["ma", "di", "wo", "do", "vr", "za", "zo"],
        Locale::Pt => ["seg.", "ter.", "qua.", "qui.", "sex.", "sáb.", "dom."],
    }
}

/// Year, month (1–12) and day of a count of days since 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
pub fn civil(days: i64) -> (i64, usize, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, usize::try_from(month).unwrap_or(1), day)
}

impl Messages {
    /// A day, as people of this language write it: `2 Dec 2026`, `2. Dez. 2026`.
    pub fn date(&self, unix: impl Borrow<i64>) -> String {
        let unix = *unix.borrow();
        let (year, month, day) = civil(unix.div_euclid(86_400));
        let name = months(self.locale)[month - 1];
        match self.locale {
            Locale::De => format!("{day}. {name} {year}"),
            Locale::Pt => format!("{day} de {name} de {year}"),
            _ => format!("{day} {name} {year}"),
        }
    }

    /// A weekday and its day of the month, for a chart's axis: `Wed 2`, `Mi. 2.`.
    pub fn weekday_day(&self, unix: impl Borrow<i64>) -> String {
        let unix = *unix.borrow();
        let days = unix.div_euclid(86_400);
        let (_, _, day) = civil(days);
        // 1970-01-01 was a Thursday (index 3 with Monday first).
        let name = weekdays(self.locale)[usize::try_from((days + 3).rem_euclid(7)).unwrap_or(0)];
        match self.locale {
            Locale::De => format!("{name} {day}."),
            _ => format!("{name} {day}"),
        }
    }

    /// A time of day in UTC, to the hour: `20:00`.
    pub fn hour(&self, unix: impl Borrow<i64>) -> String {
        let unix = *unix.borrow();
        format!("{:02}:00", unix.rem_euclid(86_400) / 3600)
    }

    /// A moment, to the minute, in UTC: `2 Dec 2026, 20:49 UTC`.
    pub fn datetime(&self, unix: impl Borrow<i64>) -> String {
        let unix = *unix.borrow();
        let secs = unix.rem_euclid(86_400);
        let time = format!("{:02}:{:02}", secs / 3600, secs % 3600 / 60);
        let sep = if self.locale == Locale::Nl { " " } else { ", " };
        format!("{}{sep}{time} UTC", self.date(unix))
    }

    /// A whole number with this language's grouping: `12,345`, `12.345`, `12 345`.
    pub fn number(&self, n: impl Borrow<i64>) -> String {
        let n = *n.borrow();
        let (group, min_digits) = match self.locale {
            Locale::En => (",", 4),
            Locale::Fr => ("\u{202f}", 4),
            // Spanish groups only from five digits (CLDR minimumGroupingDigits 2).
            Locale::Es => (".", 5),
            _ => (".", 4),
        };
        let digits = n.unsigned_abs().to_string();
        let mut out = String::new();
        if n < 0 {
            out.push('-');
        }
        if digits.len() < min_digits {
            out.push_str(&digits);
            return out;
        }
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push_str(group);
            }
            out.push(c);
        }
        out
    }

    /// A number with `places` decimals and this language's decimal separator.
    pub fn decimal(&self, value: f64, places: usize) -> String {
        let text = format!("{value:.places$}");
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        let whole = int
            .parse::<i64>()
            .map(|n| self.number(n))
            .unwrap_or_else(|_| int.to_string());
        let whole = if int.starts_with("-0") {
            format!("-{whole}")
        } else {
            whole
        };
        if frac.is_empty() {
            return whole;
        }
        let sep = if self.locale == Locale::En { "." } else { "," };
        format!("{whole}{sep}{frac}")
    }

    /// `one` or `other` by this language's plural rule, with `{n}` filled in: French
    /// and Portuguese take the singular for 0 and 1, the others for 1 alone.
    pub fn plural(&self, n: impl Borrow<i64>, one: &str, other: &str) -> String {
        let n = *n.borrow();
        let singular = match self.locale {
            Locale::Fr | Locale::Pt => n == 0 || n == 1,
            _ => n == 1,
        };
        self.fill(if singular { one } else { other }, "n", self.number(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOMENT: i64 = 1_796_244_540; // 2026-12-02 20:49 UTC

    #[test]
    fn civil_dates_match_known_days() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(MOMENT / 86_400), (2026, 12, 2));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(-1), (1969, 12, 31));
    }

    #[test]
    fn dates_follow_each_language() {
        let shown: Vec<String> = Locale::ALL.iter().map(|l| l.messages().datetime(MOMENT)).collect();
        assert_eq!(
            shown,
            [
                "2 Dec 2026, 20:49 UTC",
                "2. Dez. 2026, 20:49 UTC",
                "2 déc. 2026, 20:49 UTC",
                "2 dic 2026, 20:49 UTC",
                "2 dic 2026, 20:49 UTC",
                "2 dec 2026 20:49 UTC",
                "2 de dez. de 2026, 20:49 UTC",
            ]
        );
    }

    #[test]
    fn weekdays_follow_each_language() {
        assert_eq!(Locale::En.messages().weekday_day(MOMENT), "Wed 2");
        assert_eq!(Locale::De.messages().weekday_day(MOMENT), "Mi. 2.");
        assert_eq!(Locale::Fr.messages().weekday_day(MOMENT), "mer. 2");
        assert_eq!(Locale::En.messages().weekday_day(0), "Thu 1", "1970-01-01");
        assert_eq!(Locale::En.messages().hour(MOMENT), "20:00");
    }

    #[test]
    fn numbers_group_per_language() {
        let en = Locale::En.messages();
        let de = Locale::De.messages();
        let fr = Locale::Fr.messages();
        let es = Locale::Es.messages();
        assert_eq!(
            (en.number(999), en.number(1234), en.number(-1_234_567)),
            ("999".into(), "1,234".into(), "-1,234,567".into())
        );
        assert_eq!(de.number(1_234_567), "1.234.567");
        assert_eq!(fr.number(12_345), "12\u{202f}345");
        assert_eq!((es.number(1234), es.number(12_345)), ("1234".into(), "12.345".into()));
        assert_eq!(
            (en.decimal(1234.5, 1), de.decimal(1234.5, 2)),
            ("1,234.5".into(), "1.234,50".into())
        );
        assert_eq!(de.decimal(-0.25, 2), "-0,25");
    }

    #[test]
    fn plurals_follow_each_language() {
        let (en, fr) = (Locale::En.messages(), Locale::Fr.messages());
        assert_eq!(en.plural(0, "{n} item", "{n} items"), "0 items");
        assert_eq!(en.plural(1, "{n} item", "{n} items"), "1 item");
        assert_eq!(fr.plural(0, "{n} élément", "{n} éléments"), "0 élément");
        assert_eq!(fr.plural(2000, "{n} élément", "{n} éléments"), "2\u{202f}000 éléments");
    }
}
