//! The rules that keep a username from passing for another one: names are stored in
//! Unicode normalisation form NFKC (UAX #15), may not hold invisible or formatting
//! characters, may not mix scripts (UTS #39 §5.1), and are compared with existing names
//! by their confusable skeleton (UTS #39 §4), which the storage keeps unique.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
use unicode_security::MixedScript;

/// `name` in NFKC: compatibility forms (fullwidth letters, ligatures, superscripts) are
/// folded into the characters they stand for, so `ａｌｉｃｅ` is `alice`.
pub fn nfkc(name: &str) -> String {
    name.nfkc().collect()
}

/// What is wrong with an NFKC `name` for a new username, if anything: a character that
/// shows nothing (format characters such as U+200B, U+200D, U+FEFF; other default
/// ignorable code points such as U+3164), a control, private-use or unassigned one; or
/// letters of more than one script, such as a Cyrillic `а` among Latin letters.
pub fn username_lookalike_problem(name: &str) -> Option<String> {
    if name.chars().any(invisible) {
        return Some("a username may not contain invisible or formatting characters".into());
    }
    // Digits and `._-` are Common and accents Inherited: they fit any script (§5.1).
    if !name.is_single_script() {
        return Some("a username may not mix letters of different scripts".into());
    }
    None
}

fn invisible(c: char) -> bool {
    use GeneralCategory::{Control, Format, PrivateUse, Unassigned};
    matches!(c.general_category(), Format | Control | PrivateUse | Unassigned)
        // The skeleton drops default ignorable code points: what it drops, no one sees.
        || unicode_security::skeleton(c.encode_utf8(&mut [0; 4])).next().is_none()
}

/// The confusable skeleton of a username (UTS #39 §4) taken from its lower-cased NFKC
/// form: two names with the same skeleton look alike (`admin`, `аdmin` with a Cyrillic
/// `а`, `admın` with a dotless `ı`), so the storage lets only one of them exist.
pub fn username_skeleton(name: &str) -> String {
    unicode_security::skeleton(&nfkc(name).to_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_forms_are_folded() {
        assert_eq!(nfkc("ａｌｉｃｅ"), "alice");
        assert_eq!(nfkc("ﬁona"), "fiona");
        assert_eq!(nfkc("bob"), "bob");
    }

    #[test]
    fn invisible_and_formatting_characters_are_refused() {
        for name in [
            "admin\u{200b}",
            "ad\u{200d}min",
            "\u{feff}admin",
            "admin\u{2060}",
            "a\u{3164}b",
            "a\u{e000}",
        ] {
            assert!(username_lookalike_problem(name).is_some(), "{name:?}");
        }
    }

    #[test]
    fn mixed_scripts_are_refused_and_single_scripts_accepted() {
        assert!(username_lookalike_problem("\u{430}dmin").is_some());
        assert!(username_lookalike_problem("pаypal").is_some());
        for name in [
            "admin",
            "иван",
            "иван-2",
            "jürgen.müller_1",
            "ελένη",
            "山田たろう",
            "admın",
        ] {
            assert_eq!(username_lookalike_problem(name), None, "{name:?}");
        }
    }

    #[test]
    fn look_alike_names_share_a_skeleton() {
        let admin = username_skeleton("admin");
        assert_eq!(username_skeleton("\u{430}dmin"), admin);
        assert_eq!(username_skeleton("adm\u{131}n"), admin);
        assert_eq!(username_skeleton("ADMIN"), admin);
        assert_eq!(username_skeleton("ａｄｍｉｎ"), admin);
        assert_ne!(username_skeleton("alice"), admin);
        assert_ne!(username_skeleton("иван"), username_skeleton("ivan"));
    }
}
