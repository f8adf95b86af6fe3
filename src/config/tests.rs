//! Settings as the operator gives them: defaults, precedence, and one clear line per
//! bad value.

use super::*;

#[test]
fn defaults_match_the_documented_ones() {
    let s = Settings::load(&RawSettings::default()).unwrap();
    assert_eq!(s.db_path, PathBuf::from("tessera.db"));
    assert_eq!(s.listen.to_string(), "127.0.0.1:9000");
    assert_eq!(s.bcrypt_cost, 10);
    assert!(s.sqlite.wal);
    let issuer = default_issuer(s.listen).unwrap();
    assert_eq!(issuer_text(&issuer), "http://127.0.0.1:9000");
}

#[test]
fn a_bad_value_names_the_setting_in_one_line() {
    let raw = RawSettings {
        bcrypt_cost: Some("99".into()),
        ..Default::default()
    };
    let err = Settings::load(&raw).unwrap_err().to_string();
    assert!(err.contains("`bcrypt_cost`"), "{err}");
    assert!(!err.contains('\n'));
    let raw = RawSettings {
        sqlite_wal: Some("maybe".into()),
        ..Default::default()
    };
    assert!(Settings::load(&raw).unwrap_err().to_string().contains("`sqlite_wal`"));
}

#[test]
fn the_forward_auth_cookie_domain_is_a_dns_name_covering_the_issuer() {
    assert_eq!(parse_cookie_domain(".Example.ORG").unwrap(), "example.org");
    for bad in [
        "org",
        "127.0.0.1",
        "example.org:443",
        "ex ample.org",
        "-a.org",
        "a..org",
        "",
    ] {
        assert!(parse_cookie_domain(bad).is_err(), "{bad}");
    }
    let with = |issuer: &str| RawSettings {
        issuer: Some(issuer.into()),
        forward_auth_cookie_domain: Some("example.org".into()),
        ..Default::default()
    };
    assert!(Settings::load(&with("https://auth.example.org")).is_ok());
    assert!(Settings::load(&with("https://example.org")).is_ok());
    let err = Settings::load(&with("https://auth.example.net"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not cover"), "{err}");
    assert!(Settings::load(&with("https://badexample.org")).is_err());
}

#[test]
fn flags_override_the_file_which_overrides_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.toml");
    std::fs::write(
        &path,
        "bcrypt_cost = 12\nlisten = \"127.0.0.1:7000\"\nsqlite_wal = false\n",
    )
    .unwrap();
    let raw = RawSettings {
        config: Some(path),
        bcrypt_cost: Some("11".into()),
        ..Default::default()
    };
    let s = Settings::load(&raw).unwrap();
    assert_eq!(s.bcrypt_cost, 11);
    assert_eq!(s.listen.port(), 7000);
    assert!(!s.sqlite.wal);
}

#[test]
fn unknown_file_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.toml");
    std::fs::write(&path, "bcrypt_cots = 12\n").unwrap();
    let raw = RawSettings {
        config: Some(path),
        ..Default::default()
    };
    assert!(matches!(Settings::load(&raw), Err(ConfigError::File { .. })));
}

#[test]
fn open_signup_without_smtp_is_refused_in_one_line() {
    let raw = RawSettings {
        signup: Some("open".into()),
        ..Default::default()
    };
    let err = Settings::load(&raw).unwrap_err().to_string();
    assert!(err.contains("`signup`") && err.contains("smtp_url"), "{err}");
    assert!(!err.contains('\n'));
    let with_mail = RawSettings {
        signup: Some("open".into()),
        smtp_url: Some("smtp://127.0.0.1:25".into()),
        smtp_from: Some("id@example.org".into()),
        ..Default::default()
    };
    assert_eq!(Settings::load(&with_mail).unwrap().signup, Signup::Open);
    let invite = RawSettings {
        signup: Some("invite".into()),
        ..Default::default()
    };
    assert_eq!(Settings::load(&invite).unwrap().signup, Signup::Invite);
}

#[test]
fn issuer_must_be_a_plain_http_url() {
    assert!(parse_issuer("ftp://x").is_err());
    assert!(parse_issuer("https://id.example.com/?a=b").is_err());
    let url = parse_issuer("https://id.example.com/").unwrap();
    assert_eq!(issuer_text(&url), "https://id.example.com");
}

#[test]
fn lifecycle_settings_parse_and_refuse_in_one_line() {
    let raw = RawSettings {
        signup: Some("invite".into()),
        signup_domains: Some(" Example.org, @example.com ".into()),
        org_name: Some("Example Org".into()),
        mail_per_hour: Some("12".into()),
        account_deletion: Some("approval".into()),
        passkey_mode: Some("username-first".into()),
        default_locale: Some("pt-BR".into()),
        access_token_alg: Some("EdDSA".into()),
        ..Default::default()
    };
    let s = Settings::load(&raw).unwrap();
    assert_eq!(s.access_token_alg, Some(crate::domain::Alg::EdDsa));
    assert_eq!(s.passkey_mode, PasskeyMode::UsernameFirst);
    assert_eq!(s.default_locale, crate::domain::Locale::Pt);
    assert_eq!(s.signup, Signup::Invite);
    assert_eq!(s.signup_domains, ["example.org", "example.com"]);
    assert_eq!((s.org_name.as_str(), s.mail_per_hour), ("Example Org", 12));
    assert_eq!(s.account_deletion, AccountDeletion::Approval);
    let defaults = Settings::load(&RawSettings::default()).unwrap();
    assert_eq!((defaults.signup, defaults.mail_per_hour), (Signup::Off, 5));
    assert_eq!(defaults.account_deletion, AccountDeletion::SelfService);
    assert_eq!(defaults.passkey_mode, PasskeyMode::Offer);
    let only = RawSettings {
        passkey_mode: Some("passkey-only".into()),
        ..Default::default()
    };
    let only = Settings::load(&only).unwrap().passkey_mode;
    assert_eq!(only, PasskeyMode::PasskeyOnly);
    assert!(only.passkey_only() && !PasskeyMode::UsernameFirst.passkey_only());
    assert_eq!(defaults.default_locale, crate::domain::Locale::En);
    for (raw, name) in lifecycle_refusals() {
        let e = Settings::load(&raw).unwrap_err().to_string();
        assert!(e.contains(name) && !e.contains('\n'), "{e}");
    }
}

/// Lifecycle settings that are refused, and the name each refusal must give.
fn lifecycle_refusals() -> Vec<(RawSettings, &'static str)> {
    vec![
        (
            RawSettings {
                signup: Some("everyone".into()),
                ..Default::default()
            },
            "signup",
        ),
        (
            RawSettings {
                signup_domains: Some("not a domain".into()),
                ..Default::default()
            },
            "signup_domains",
        ),
        (
            RawSettings {
                mail_per_hour: Some("0".into()),
                ..Default::default()
            },
            "mail_per_hour",
        ),
        (
            RawSettings {
                account_deletion: Some("never".into()),
                ..Default::default()
            },
            "account_deletion",
        ),
        (
            RawSettings {
                org_name: Some(" ".into()),
                ..Default::default()
            },
            "org_name",
        ),
        (
            RawSettings {
                passkey_mode: Some("passkeys-please".into()),
                ..Default::default()
            },
            "passkey_mode",
        ),
        (
            RawSettings {
                default_locale: Some("sv".into()),
                ..Default::default()
            },
            "default_locale",
        ),
        (
            RawSettings {
                access_token_alg: Some("HS256".into()),
                ..Default::default()
            },
            "access_token_alg",
        ),
        (
            RawSettings {
                accent_color: Some("red".into()),
                ..Default::default()
            },
            "accent_color",
        ),
    ]
}
