//! The rule that keeps a username from passing for an email address: text with an `@`
//! is looked up as an address (sign-in links, password resets), so a username holds
//! an `@` only when it is the account's own verified address.

/// What is wrong with `username` for an account whose verified address is
/// `verified_email` (`None`: no address, or one not verified yet), if anything.
/// Accounts made before the rule keep their names: it is checked only where a name is
/// chosen.
pub fn username_address_problem(username: &str, verified_email: Option<&str>) -> Option<String> {
    let username = username.trim();
    if !username.contains('@') {
        return None;
    }
    let own = verified_email.is_some_and(|e| e.trim().eq_ignore_ascii_case(username));
    (!own).then(|| "a username may contain @ only when it is the account's own verified email address".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_at_sign_is_allowed_only_for_the_accounts_own_verified_address() {
        assert_eq!(username_address_problem("erin", None), None);
        assert!(username_address_problem("erin@example.org", None).is_some());
        assert!(username_address_problem("erin@example.org", Some("mallory@example.org")).is_some());
        assert_eq!(
            username_address_problem("Erin@Example.org", Some("erin@example.org")),
            None
        );
        assert!(username_address_problem("@", None).is_some());
    }
}
