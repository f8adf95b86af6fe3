//! The languages Tessera speaks, by their BCP 47 tags; their messages live in `i18n`.

/// A language Tessera speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Locale {
    #[default]
    En,
    De,
    Fr,
    Es,
    It,
    Nl,
    Pt,
}

impl Locale {
    /// Every locale, English first (also the order of the language picker).
    pub const ALL: [Locale; 7] = [
        Locale::En,
        Locale::De,
        Locale::Fr,
        Locale::Es,
        Locale::It,
        Locale::Nl,
        Locale::Pt,
    ];

    /// The BCP 47 tag, as in `ui_locales_supported` and `<html lang>`.
    pub fn tag(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::De => "de",
            Locale::Fr => "fr",
            Locale::Es => "es",
            Locale::It => "it",
            Locale::Nl => "nl",
            Locale::Pt => "pt",
        }
    }

    /// The locale for a BCP 47 tag, by its primary language subtag (`de-CH` is German,
    /// `pt-BR` Portuguese); `None` for a language Tessera does not speak.
    pub fn from_tag(tag: &str) -> Option<Locale> {
        let primary = tag.trim().split(['-', '_']).next()?;
        Locale::ALL.into_iter().find(|l| l.tag().eq_ignore_ascii_case(primary))
    }
}

/// The tags of every locale, for discovery's `ui_locales_supported` and messages that
/// list them.
pub fn supported() -> Vec<&'static str> {
    Locale::ALL.iter().map(|l| l.tag()).collect()
}
