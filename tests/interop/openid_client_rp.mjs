// A relying party built on Node's openid-client (v6), run against a live Tessera.
// Environment: ISSUER, CLIENT_ID, CLIENT_SECRET, USERNAME, PASSWORD, REDIRECT_URI,
// POST_LOGOUT_URI. Exits non-zero with a message on the first step that fails.
import * as client from 'openid-client';
import { browserLogin as login } from './browser_login.mjs';

const env = process.env;
const fail = (what) => { console.error(`openid-client interop: ${what}`); process.exit(1); };
const check = (cond, what) => { if (!cond) fail(what); };

const config = await client.discovery(new URL(env.ISSUER), env.CLIENT_ID, env.CLIENT_SECRET, undefined, {
  execute: [client.allowInsecureRequests],
});
const verifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const nonce = client.randomNonce();
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: env.REDIRECT_URI,
  scope: 'openid profile email',
  code_challenge: await client.calculatePKCECodeChallenge(verifier),
  code_challenge_method: 'S256',
  state,
  nonce,
});
const { callback, cookies } = await login(url, env.USERNAME, env.PASSWORD, fail);
const tokens = await client.authorizationCodeGrant(config, callback, {
  pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce,
});
const claims = tokens.claims();
check(claims.preferred_username === env.USERNAME, 'preferred_username in the ID token');

const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
check(info.email === `${env.USERNAME}@example.com`, 'email from userinfo');

const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
check(refreshed.refresh_token !== tokens.refresh_token, 'refresh token rotated');

const introspected = await client.tokenIntrospection(config, refreshed.access_token);
check(introspected.active === true && introspected.sub === claims.sub, 'introspection');

const end = client.buildEndSessionUrl(config, {
  id_token_hint: refreshed.id_token, post_logout_redirect_uri: env.POST_LOGOUT_URI, state: 'bye',
});
const logout = await fetch(end, { redirect: 'manual', headers: { cookie: cookies } });
check(logout.status === 302 && logout.headers.get('location') === `${env.POST_LOGOUT_URI}?state=bye`, 'logout');
const after = await client.tokenIntrospection(config, refreshed.access_token);
check(after.active === false, 'tokens of the ended session are inactive');

await client.tokenRevocation(config, refreshed.refresh_token);
console.log('openid-client interop: ok');
