//! Tessera: a single-binary OpenID Connect provider on SQLite.

pub mod account;
pub mod admin;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod branding;
pub mod cli;
pub mod clock;
pub mod config;
pub mod context;
pub mod crypto;
pub mod db;
pub mod domain;
pub mod error;
pub mod federation;
pub mod forward_auth;
pub mod http;
pub mod i18n;
pub mod lifecycle;
pub mod mail;
pub mod metrics;
pub mod oidc;
pub mod replica;
pub mod signin;
pub mod startup;
pub mod state;
