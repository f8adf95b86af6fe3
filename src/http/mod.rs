//! HTTP: the route table, handlers (one file per endpoint family), and the mapping of
//! errors to responses. The only module besides `startup` that uses actix-web.

pub mod account;
pub mod account_confirm;
pub mod account_totp;
pub mod admin;
pub mod admin_api;
mod admin_apps;
mod admin_claims;
pub mod admin_clients;
pub mod admin_groups;
mod admin_presets;
mod admin_providers;
mod admin_registration;
pub mod admin_users;
pub mod assets;
pub mod authorize;
pub mod branding;
mod charts;
pub mod cookies;
pub mod cors;
pub mod device;
pub mod discovery;
pub mod errors;
pub mod federation;
pub mod forward_auth;
pub mod guard;
pub mod invite;
pub mod lang;
pub mod login;
pub mod logout;
mod multipart;
mod openapi;
pub mod pages;
pub mod par;
pub mod params;
pub mod passkeys;
pub mod portal;
pub mod probes;
pub mod register;
mod registered_logo;
pub mod reset;
pub mod setup;
pub mod signin_link;
pub mod signup;
pub mod token;
pub mod userinfo;
pub mod webfinger;

use actix_web::web;

/// Every route, used by the server and the tests alike.
pub fn routes(cfg: &mut web::ServiceConfig) {
    // actix tries resources in the order they are registered, running a regular
    // expression for each one with a `{segment}`: the endpoints relying parties and
    // resource servers call on every request come first, ahead of the dozens of admin
    // patterns, so they are found (and named for the metrics) without those. None of
    // the patterns below overlaps them.
    cfg.route("/token", web::post().to(token::token))
        .route("/introspect", web::post().to(token::introspect))
        .route("/authorize", web::get().to(authorize::authorize_get))
        .route("/authorize", web::post().to(authorize::authorize_post))
        .route("/login", web::post().to(login::login))
        .route("/userinfo", web::get().to(userinfo::userinfo_get))
        .route("/userinfo", web::post().to(userinfo::userinfo_post))
        .route("/jwks", web::get().to(discovery::jwks))
        .route("/.well-known/openid-configuration", web::get().to(discovery::discovery))
        .route("/revoke", web::post().to(token::revoke))
        .route("/healthz", web::get().to(probes::healthz))
        .route("/readyz", web::get().to(probes::readyz));
    // App presets ("Add an application"): ahead of `/admin/clients/{id}` and the
    // admin API scope's catch-all.
    admin_presets::routes(cfg);
    branding::routes(cfg);
    registered_logo::routes(cfg);
    // Claim mapping, token preview and test sign-in: ahead of the admin API scope's
    // catch-all and of `/admin/clients/{id}/{action}`.
    admin_claims::routes(cfg);
    admin_apps::routes(cfg);
    admin_providers::routes(cfg);
    admin_registration::routes(cfg);
    admin_api::routes(cfg);
    admin_clients::routes(cfg);
    cors::routes(cfg);
    federation::routes(cfg);
    forward_auth::routes(cfg);
    par::routes(cfg);
    register::routes(cfg);
    webfinger::routes(cfg);
    cfg.route(
        "/.well-known/oauth-authorization-server",
        web::get().to(discovery::discovery),
    )
    .route("/metrics", web::get().to(probes::metrics))
    .route("/static/tessera.css", web::get().to(assets::stylesheet))
    .route("/login/language", web::post().to(login::language))
    .route("/login/username", web::post().to(login::username))
    .route("/login/mfa", web::post().to(login::mfa))
    .route("/login/mfa/resend", web::post().to(login::resend))
    .route("/login/email", web::post().to(signin_link::start))
    .route("/login/email/send", web::post().to(signin_link::send))
    .route("/login/email/code", web::post().to(signin_link::code))
    .route("/login/email/link", web::get().to(signin_link::link_page))
    .route("/login/email/link", web::post().to(signin_link::link_confirm))
    .route("/account/email-mfa", web::post().to(account::email_mfa))
    .route("/account/notifications", web::post().to(account::notifications))
    .route("/account/devices/untrust", web::post().to(account::untrust_device))
    .route("/login/passkey", web::post().to(passkeys::login))
    .route("/login/passkey/options", web::post().to(passkeys::login_options))
    .route("/account/passkeys", web::post().to(passkeys::register))
    .route(
        "/account/passkeys/options",
        web::post().to(passkeys::registration_options),
    )
    .route("/account/passkeys/delete", web::post().to(passkeys::remove))
    .route("/static/passkey.js", web::get().to(passkeys::script))
    .route("/consent", web::post().to(login::consent))
    .route("/logout", web::get().to(logout::logout_get))
    .route("/logout", web::post().to(logout::logout_post))
    .route("/logout/confirm", web::post().to(logout::confirm))
    .route("/device_authorization", web::post().to(device::authorization))
    .route("/device", web::get().to(device::page))
    .route("/device", web::post().to(device::decide))
    .route("/account", web::get().to(account::page))
    .route("/account/profile", web::post().to(account::profile))
    .route("/account/confirm", web::get().to(account_confirm::confirm_get))
    .route("/account/confirm", web::post().to(account_confirm::confirm_post))
    .route(
        "/account/confirm/passkey",
        web::post().to(account_confirm::passkey_post),
    )
    .route(
        "/account/confirm/passkey/options",
        web::post().to(account_confirm::passkey_options),
    )
    .route("/account/password", web::post().to(account::password))
    .route("/account/sessions/end", web::post().to(account::end_one))
    .route("/account/sessions/end-others", web::post().to(account::end_others))
    .route("/account/totp", web::get().to(account_totp::totp_get))
    .route("/account/totp", web::post().to(account_totp::totp_confirm))
    .route("/account/totp/disable", web::post().to(account_totp::totp_disable))
    .route("/account/apps/revoke", web::post().to(account::revoke_consent))
    .route("/password/forgot", web::get().to(reset::forgot_page))
    .route("/password/forgot", web::post().to(reset::forgot_submit))
    .route("/password/reset", web::get().to(reset::reset_page))
    .route("/password/reset", web::post().to(reset::reset_submit))
    .route("/password/reset/passkey", web::post().to(reset::passkey_submit))
    .route(
        "/password/reset/passkey/options",
        web::post().to(reset::passkey_options),
    )
    .route("/signup", web::get().to(signup::page))
    .route("/signup", web::post().to(signup::submit))
    .route("/signup/start", web::post().to(signup::start))
    .route("/signup/continue", web::post().to(signup::resume_login))
    .route("/email/verify", web::get().to(signup::verify_page))
    .route("/email/verify", web::post().to(signup::verify_confirm))
    .route("/email/verify/passkey", web::post().to(signup::verify_passkey))
    .route(
        "/email/verify/passkey/options",
        web::post().to(signup::verify_passkey_options),
    )
    .route("/invite", web::get().to(invite::page))
    .route("/invite", web::post().to(invite::accept))
    .route("/invite/passkey", web::post().to(invite::accept_passkey))
    .route("/invite/passkey/options", web::post().to(invite::passkey_options))
    .route("/admin/invitations", web::get().to(invite::admin_list))
    .route("/admin/invitations", web::post().to(invite::admin_create))
    .route("/admin/invitations/{id}/revoke", web::post().to(invite::admin_revoke))
    .route("/account/delete", web::post().to(account::delete))
    .route("/setup", web::get().to(setup::page))
    .route("/setup", web::post().to(setup::submit));
}
