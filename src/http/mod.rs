//! HTTP: the route table, handlers (one file per endpoint family), and the mapping of
//! errors to responses. The only module besides `startup` that uses actix-web.

pub mod account;
pub mod admin;
pub mod assets;
pub mod branding;
pub mod cookies;
pub mod cors;
pub mod errors;
pub mod guard;
pub mod lang;
pub mod pages;
pub mod params;
pub mod probes;
pub mod protocol;
pub mod signin;
use actix_web::web;

/// Every route, used by the server and the tests alike.
pub fn routes(cfg: &mut web::ServiceConfig) {
    // actix tries resources in the order they are registered, running a regular
    // expression for each one with a `{segment}`: the endpoints relying parties and
    // resource servers call on every request come first, ahead of the dozens of admin
    // patterns, so they are found (and named for the metrics) without those. None of
    // the patterns below overlaps them.
    cfg.route("/token", web::post().to(protocol::token::token))
        .route("/introspect", web::post().to(protocol::token::introspect))
        .route("/authorize", web::get().to(protocol::authorize::authorize_get))
        .route("/authorize", web::post().to(protocol::authorize::authorize_post))
        .route("/login", web::post().to(signin::login::login))
        .route("/userinfo", web::get().to(protocol::userinfo::userinfo_get))
        .route("/userinfo", web::post().to(protocol::userinfo::userinfo_post))
        .route("/jwks", web::get().to(protocol::discovery::jwks))
        .route(
            "/.well-known/openid-configuration",
            web::get().to(protocol::discovery::discovery),
        )
        .route("/revoke", web::post().to(protocol::token::revoke))
        .route("/healthz", web::get().to(probes::healthz))
        .route("/readyz", web::get().to(probes::readyz));
    // App presets ("Add an application"): ahead of `/admin/clients/{id}` and the
    // admin API scope's catch-all.
    admin::presets::routes(cfg);
    branding::routes(cfg);
    admin::branding::routes(cfg);
    protocol::registered_logo::routes(cfg);
    // Claim mapping, token preview and test sign-in: ahead of the admin API scope's
    // catch-all and of `/admin/clients/{id}/{action}`.
    admin::claims::routes(cfg);
    admin::apps::routes(cfg);
    admin::providers::routes(cfg);
    admin::registration::routes(cfg);
    admin::api::routes(cfg);
    admin::clients::routes(cfg);
    cors::routes(cfg);
    signin::federation::routes(cfg);
    signin::forward_auth::routes(cfg);
    protocol::par::routes(cfg);
    protocol::register::routes(cfg);
    protocol::webfinger::routes(cfg);
    signin_routes(cfg);
    account_routes(cfg);
    protocol_routes(cfg);
}

/// The sign-in fronts' forms: the login page's own posts, the second factor, links and
/// codes by mail, passkeys, consent, sign-up and address verification.
fn signin_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/login/language", web::post().to(signin::login::language))
        .route("/login/username", web::post().to(signin::login::username))
        .route("/login/mfa", web::post().to(signin::login::mfa))
        .route("/login/mfa/resend", web::post().to(signin::login::resend))
        .route("/login/email", web::post().to(signin::link::start))
        .route("/login/email/send", web::post().to(signin::link::send))
        .route("/login/email/code", web::post().to(signin::link::code))
        .route("/login/email/link", web::get().to(signin::link::link_page))
        .route("/login/email/link", web::post().to(signin::link::link_confirm))
        .route("/login/passkey", web::post().to(signin::passkeys::login))
        .route(
            "/login/passkey/options",
            web::post().to(signin::passkeys::login_options),
        )
        .route("/account/passkeys", web::post().to(signin::passkeys::register))
        .route(
            "/account/passkeys/options",
            web::post().to(signin::passkeys::registration_options),
        )
        .route("/account/passkeys/delete", web::post().to(signin::passkeys::remove))
        .route("/static/passkey.js", web::get().to(signin::passkeys::script))
        .route("/consent", web::post().to(signin::login::consent))
        .route("/signup", web::get().to(signin::signup::page))
        .route("/signup", web::post().to(signin::signup::submit))
        .route("/signup/start", web::post().to(signin::signup::start))
        .route("/signup/continue", web::post().to(signin::signup::resume_login))
        .route("/email/verify", web::get().to(signin::signup::verify_page))
        .route("/email/verify", web::post().to(signin::signup::verify_confirm))
        .route("/email/verify/passkey", web::post().to(signin::signup::verify_passkey))
        .route(
            "/email/verify/passkey/options",
            web::post().to(signin::signup::verify_passkey_options),
        );
}

/// The signed-in user's own pages, reset, invitations and the first-run setup.
fn account_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/account/email-mfa", web::post().to(account::email_mfa))
        .route("/account/notifications", web::post().to(account::notifications))
        .route("/account/devices/untrust", web::post().to(account::untrust_device))
        .route("/account", web::get().to(account::page))
        .route("/account/profile", web::post().to(account::profile))
        .route("/account/confirm", web::get().to(account::confirm::confirm_get))
        .route("/account/confirm", web::post().to(account::confirm::confirm_post))
        .route(
            "/account/confirm/passkey",
            web::post().to(account::confirm::passkey_post),
        )
        .route(
            "/account/confirm/passkey/options",
            web::post().to(account::confirm::passkey_options),
        )
        .route("/account/password", web::post().to(account::password))
        .route("/account/sessions/end", web::post().to(account::end_one))
        .route("/account/sessions/end-others", web::post().to(account::end_others))
        .route("/account/totp", web::get().to(account::totp::totp_get))
        .route("/account/totp", web::post().to(account::totp::totp_confirm))
        .route("/account/totp/disable", web::post().to(account::totp::totp_disable))
        .route("/account/apps/revoke", web::post().to(account::revoke_consent))
        .route("/password/forgot", web::get().to(account::reset::forgot_page))
        .route("/password/forgot", web::post().to(account::reset::forgot_submit))
        .route("/password/reset", web::get().to(account::reset::reset_page))
        .route("/password/reset", web::post().to(account::reset::reset_submit))
        .route(
            "/password/reset/passkey",
            web::post().to(account::reset::passkey_submit),
        )
        .route(
            "/password/reset/passkey/options",
            web::post().to(account::reset::passkey_options),
        )
        .route("/invite", web::get().to(account::invite::page))
        .route("/invite", web::post().to(account::invite::accept))
        .route("/invite/passkey", web::post().to(account::invite::accept_passkey))
        .route(
            "/invite/passkey/options",
            web::post().to(account::invite::passkey_options),
        )
        .route("/admin/invitations", web::get().to(account::invite::admin_list))
        .route("/admin/invitations", web::post().to(account::invite::admin_create))
        .route(
            "/admin/invitations/{id}/revoke",
            web::post().to(account::invite::admin_revoke),
        )
        .route("/account/delete", web::post().to(account::delete))
        .route("/setup", web::get().to(account::setup::page))
        .route("/setup", web::post().to(account::setup::submit));
}

/// Discovery's RFC 8414 path, RP-Initiated Logout, the device flow's endpoints, the
/// metrics and the stylesheet.
fn protocol_routes(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/.well-known/oauth-authorization-server",
        web::get().to(protocol::discovery::discovery),
    )
    .route("/logout", web::get().to(protocol::logout::logout_get))
    .route("/logout", web::post().to(protocol::logout::logout_post))
    .route("/logout/confirm", web::post().to(protocol::logout::confirm))
    .route("/device_authorization", web::post().to(protocol::device::authorization))
    .route("/device", web::get().to(protocol::device::page))
    .route("/device", web::post().to(protocol::device::decide))
    .route("/metrics", web::get().to(probes::metrics))
    .route("/static/tessera.css", web::get().to(assets::stylesheet));
}
