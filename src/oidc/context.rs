//! `Ctx`: the crate-wide context (`crate::context::Ctx`) with the client registry
//! beside it, what protocol code receives.

use std::ops::Deref;

use crate::oidc::client_cache::ClientCache;

/// Made once per request from the server state (`ctx()` in src/state.rs); it
/// dereferences to the crate-wide context, so `cx.issuer`, `cx.db` and `cx.now` read
/// through, and a use case taking `&crate::context::Ctx` accepts `&cx`.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub base: crate::context::Ctx<'a>,
    /// Client registrations, cached for a second.
    pub clients: &'a ClientCache,
}

impl<'a> Deref for Ctx<'a> {
    type Target = crate::context::Ctx<'a>;

    fn deref(&self) -> &Self::Target {
        &self.base
    }
}

/// What holds the server's parts and makes a context of them on demand: a background
/// task owns one and makes a fresh context each pass, so that each pass reads the
/// clock anew.
pub trait MakeCtx: Send + Sync + 'static {
    fn ctx(&self) -> Ctx<'_>;
}
