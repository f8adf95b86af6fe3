// The SPA's oidc-client-ts UserManager, shared by its pages: a public client that
// signs in with the authorization code flow and PKCE, renews with its refresh token
// or a hidden prompt=none iframe, and signs out through the end_session_endpoint.
// /config.js (written by the test's server) sets window.SPA_CONFIG.

oidc.Log.setLogger(console);
oidc.Log.setLevel(oidc.Log.WARN);

const manager = new oidc.UserManager({
  authority: SPA_CONFIG.authority,
  client_id: SPA_CONFIG.client_id,
  redirect_uri: `${location.origin}/callback.html`,
  silent_redirect_uri: `${location.origin}/silent.html`,
  post_logout_redirect_uri: `${location.origin}/index.html`,
  response_type: "code",
  scope: "openid profile email",
  // Userinfo is a cross-origin GET with a bearer token: a CORS preflight.
  loadUserInfo: true,
  // Sign-out revokes both tokens at the revocation endpoint first.
  revokeTokensOnSignout: true,
  // Renewals happen only when the test asks for them.
  automaticSilentRenew: false,
  silentRequestTimeoutInSeconds: 10,
  requestTimeoutInSeconds: 10,
});

// What the test reads about the signed-in user (the tokens themselves included).
function summary(user) {
  if (!user) return null;
  return {
    sub: user.profile.sub,
    username: user.profile.preferred_username,
    email: user.profile.email,
    access_token: user.access_token,
    refresh_token: user.refresh_token ?? null,
    id_token: user.id_token,
    expires_in: user.expires_in,
    scope: user.scope,
  };
}

// An oidc-client-ts error as plain data: ErrorResponse carries the OAuth error code.
function failure(e) {
  return { error: e.error ?? null, error_description: e.error_description ?? null, message: String(e.message ?? e) };
}
