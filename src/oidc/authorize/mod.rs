//! The authorization endpoint (RFC 6749 §4.1, OpenID Connect Core §3.1.2): validating
//! a request, deciding between a code, the login page and the consent page, and
//! answering the client by redirect or form post.

mod auth_request;
mod decide;
mod error;
mod request;
mod response;
mod source;

pub use auth_request::{AuthRequest, Prompt};
pub use decide::{claims_beyond_scope, consent_needed, decide, denied_response, issue_code, Next};
pub use error::AuthorizeError;
pub use request::{validate, validate_pushed};
pub use response::{code_record, AuthResponse, CodeRecord};
pub use source::Via;
