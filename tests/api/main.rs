//! Integration tests: the real server on port 0 with a temporary database, driven the
//! way relying parties and browsers drive it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod account;
mod admin_api;
mod admin_ui;
mod authorize;
mod browser;
mod claims;
mod cli;
mod client_auth;
mod conformance;
mod consent;
mod contract;
mod cors;
mod deletion;
mod device;
mod email_mfa;
mod failover;
mod federation;
mod flow;
mod forward_auth;
mod fuzz;
mod grants;
mod hardening;
mod helpers;
mod interop;
mod invite;
mod keys;
mod logout;
mod mail;
mod nodes;
mod notices;
mod outbox;
mod passkeys;
mod process;
mod providers_admin;
mod reauth;
mod reset;
mod setup;
mod signin_link;
mod signup;
mod smtp;
mod storage;
mod token;
mod transfer;
mod upstream;
