//! Open self-signup (`--signup open`, with mail on): the form's rules (the setup page's
//! password rules, `--signup-domains`), the account created unverified and held from
//! signing in until its address is confirmed, and one answer whether or not the
//! address already has an account, so the form reveals no one's address.

use serde_json::json;

use crate::audit::Event;
use crate::config::{Settings, Signup};
use crate::context::Ctx;
use crate::crypto::random::random_id;
use crate::crypto::TokenHash;
use crate::db::{self, users::NewUser, DbError, Tx};
use crate::domain::{Email, Problems, Username};
use crate::error::Internal;
use crate::i18n::Messages;
use crate::mail::message::Message;
use crate::mail::outbox::{greeting, queue, Mail};

use super::verify::{self, Link, Reason};
use super::wake;

/// Whether anyone may sign up: `open`, and mail on, since an address that cannot be
/// verified cannot sign in (`Settings::load` refuses `open` without SMTP; settings
/// made in code are treated as `off`).
pub fn open(settings: &Settings) -> bool {
    settings.signup == Signup::Open && settings.smtp.is_some()
}

/// What the sign-up form holds, as typed.
#[derive(Clone, Copy)]
pub struct Form<'a> {
    pub username: &'a str,
    pub email: &'a str,
    pub name: &'a str,
    pub password: &'a str,
    pub confirm: &'a str,
    /// A passkey instead of a password: the account is made without one, and its
    /// passkey is made when the mailed link confirms the address.
    pub passkey: bool,
}

/// What a sign-up came to.
#[derive(Debug)]
pub enum Outcome {
    /// "Check your mail": the account was created and its link mailed, or the address
    /// already had an account and its owner was told. The person cannot tell which.
    Sent,
    /// Fields to correct, by field name.
    Invalid(Problems),
}

/// The rules of every chosen password (the setup page's, less its longer minimum for
/// an administrator).
pub fn password_problem(password: &str, username: &str) -> Option<String> {
    crate::domain::password_problem(password, username)
}

/// `--signup-domains`: the address's domain, compared without regard to case.
fn domain_allowed(settings: &Settings, email: &str) -> bool {
    let domain = email
        .rsplit_once('@')
        .map(|(_, d)| d.to_ascii_lowercase())
        .unwrap_or_default();
    settings.signup_domains.is_empty() || settings.signup_domains.contains(&domain)
}

/// The checked form, or what is wrong with it.
struct Checked {
    username: Username,
    email: Email,
    name: Option<String>,
}

fn check(settings: &Settings, form: &Form<'_>) -> Result<Checked, Problems> {
    // The address is not verified yet: a username with an `@` is refused.
    let username = Username::parse_new(form.username.trim(), None);
    let email = Email::parse(form.email).and_then(|e| {
        if domain_allowed(settings, e.as_str()) {
            Ok(e)
        } else {
            let t = crate::i18n::t();
            let domains = settings.signup_domains.join(", ");
            Err(crate::domain::ParseError(t.fill(
                t.acct_signup_domains_only,
                "domains",
                domains,
            )))
        }
    });
    let name = form.name.trim();
    let problems: Problems = [
        ("username", username.as_ref().err().map(|e| e.0.clone())),
        ("email", email.as_ref().err().map(|e| e.0.clone())),
        (
            "name",
            (name.chars().count() > 200).then(|| crate::i18n::t().acct_error_name_too_long.to_string()),
        ),
        (
            "password",
            (!form.passkey)
                .then(|| password_problem(form.password, form.username.trim()))
                .flatten(),
        ),
        (
            "confirm",
            (!form.passkey && form.password != form.confirm)
                .then(|| crate::i18n::t().acct_error_passwords_differ.to_string()),
        ),
    ]
    .into_iter()
    .filter_map(|(field, problem)| problem.map(|p| (field.to_string(), p)))
    .collect();
    match (username, email, problems.is_empty()) {
        (Ok(username), Ok(email), true) => Ok(Checked {
            username,
            email,
            name: (!name.is_empty()).then(|| name.to_string()),
        }),
        _ => Err(problems),
    }
}

/// The refusal of a username an account has, or one that looks like an account's.
fn taken(t: &Messages, why: super::Unavailable) -> Problems {
    let message = match why {
        super::Unavailable::Taken => t.acct_error_username_taken,
        super::Unavailable::LooksLike => t.acct_error_username_lookalike,
    };
    Problems::from([("username".to_string(), message.to_string())])
}

/// Creates the account from the form, unverified and held from signing in, and mails
/// its link (bound to the parked sign-in `request` it came from, if any), with
/// `account.signup`, in one transaction. A taken username is said (usernames are not
/// secret here, and the administrator's form says the same); a taken address is not:
/// its owner is mailed instead and the answer is the one of a sign-up. Both paths hash
/// the password (or, with a passkey instead, neither does) and make one write, so the
/// timing does not tell them apart either.
pub async fn submit(cx: &Ctx<'_>, form: Form<'_>, request: Option<TokenHash>, ip: &str) -> Result<Outcome, Internal> {
    let checked = match check(cx.settings, &form) {
        Ok(c) => c,
        Err(problems) => return Ok(Outcome::Invalid(problems)),
    };
    let password_hash = if form.passkey {
        crate::crypto::password::NO_PASSWORD.to_string()
    } else {
        cx.hasher.hash(form.password).await?
    };
    let link = Link::new(cx);
    let forgot = cx.url("/password/forgot");
    let (mail, now, ip) = (Mail::new(cx.settings), cx.now, ip.to_string());
    let outcome = cx
        .db
        .write(move |c| {
            // The username first, whatever the address: "taken" must not depend on it.
            if let Some(why) = super::username_unavailable(c, checked.username.as_str())? {
                return Ok(Outcome::Invalid(taken(mail.t, why)));
            }
            if db::users::email_taken(c, checked.email.as_str())? {
                // Told when one account has it; two sharing it are left alone.
                if let Some(owner) = db::users::find_by_email(c, checked.email.as_str())? {
                    tell_owner(c, &mail, &owner, &forgot, &ip, now)?;
                }
                return Ok(Outcome::Sent);
            }
            let new = NewUser {
                sub: &random_id(),
                username: checked.username.as_str(),
                email: Some(checked.email.as_str()),
                name: checked.name.as_deref(),
                password_hash: &password_hash,
                is_admin: false,
                now,
            };
            let id = match db::users::insert(c, &new) {
                Ok(id) => id,
                Err(DbError::Conflict) => return Ok(Outcome::Invalid(taken(mail.t, super::Unavailable::Taken))),
                Err(e) => return Err(e),
            };
            db::users::set_must_verify(c, id, true)?;
            let Some(user) = db::users::find_by_id(c, id)? else {
                return Err(DbError::NotFound);
            };
            Event::new("account.signup")
                .actor(&user.username)
                .target(&user.username)
                .ip(Some(ip.as_str()))
                .detail(json!({ "email": checked.email.as_str(), "from_request": request.is_some() }))
                .write(c, now)?;
            verify::send_in(
                c,
                &mail,
                &link,
                &user,
                checked.email.as_str(),
                Reason::SignUp,
                request.as_ref(),
                now,
            )?;
            Ok(Outcome::Sent)
        })
        .await?;
    if matches!(outcome, Outcome::Sent) {
        wake(cx);
    }
    Ok(outcome)
}

/// Tells the owner of an address that someone tried to sign up with it, and writes
/// `account.signup_refused` for the administrators (who see addresses anyway).
fn tell_owner(
    conn: &Tx<'_>,
    mail: &Mail,
    owner: &db::users::User,
    forgot: &str,
    ip: &str,
    now: i64,
) -> Result<(), DbError> {
    let Some(to) = owner.email.as_deref() else {
        return Ok(());
    };
    let t = mail.t;
    let message = Message::new(t.mail_signup_taken_subject, greeting(t, owner))
        .paragraph(t.fill2(t.mail_signup_taken, "ip", ip, "username", &owner.username))
        .action(t.mail_signup_taken_action, forgot)
        .after(t.mail_signup_taken_after);
    queue(conn, mail, to, Some(owner.id), "signup-taken", &message, now)?;
    Event::new("account.signup_refused")
        .actor("signup")
        .target(&owner.username)
        .ip(Some(ip))
        .detail(json!({ "reason": "email taken" }))
        .write(conn, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form<'a>(username: &'a str, email: &'a str, password: &'a str) -> Form<'a> {
        Form {
            username,
            email,
            name: "",
            password,
            confirm: password,
            passkey: false,
        }
    }

    #[test]
    fn sign_up_passwords_follow_the_setup_rules() {
        assert!(password_problem("short", "ada").is_some());
        assert!(password_problem("aaaaaaaaaaaa", "ada").is_some());
        assert!(password_problem("12345678", "ada").is_some());
        assert!(password_problem("Password", "ada").is_some());
        assert!(password_problem("my-ada-secret", "Ada").is_some());
        assert!(
            password_problem(&"long horse ".repeat(7), "ada").is_some(),
            "over 72 bytes"
        );
        assert!(password_problem("correct horse", "ada").is_none());
    }

    #[test]
    fn domains_limit_addresses_without_regard_to_case() {
        let settings = Settings {
            signup_domains: vec!["example.org".into()],
            ..Settings::default()
        };
        assert!(check(&settings, &form("ada", "ada@Example.ORG", "correct horse")).is_ok());
        let problems = check(&settings, &form("ada", "ada@example.com", "correct horse"))
            .err()
            .unwrap_or_default();
        assert!(problems["email"].contains("example.org"), "{problems:?}");
        assert!(check(&Settings::default(), &form("ada", "ada@example.com", "correct horse")).is_ok());
    }

    #[test]
    fn every_field_is_checked_at_once() {
        let mut f = form("a b", "nobody", "short");
        f.confirm = "other";
        let problems = check(&Settings::default(), &f).err().unwrap_or_default();
        let fields: Vec<&str> = problems.keys().map(String::as_str).collect();
        assert_eq!(fields, ["confirm", "email", "password", "username"]);
    }

    #[test]
    fn open_needs_mail() {
        let open_without_mail = Settings {
            signup: Signup::Open,
            ..Settings::default()
        };
        assert!(!open(&open_without_mail));
        assert!(!open(&Settings::default()));
    }
}
