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
mod device;
mod failover;
mod flow;
mod fuzz;
mod grants;
mod hardening;
mod helpers;
mod interop;
mod keys;
mod logout;
mod mail;
mod nodes;
mod passkeys;
mod process;
mod reauth;
mod setup;
mod smtp;
mod storage;
mod token;
mod transfer;
