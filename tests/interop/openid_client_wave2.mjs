// openid-client (v6) with the second protocol wave against a live Tessera: a request
// object signed with the client's key (RFC 9101) pushed to the PAR endpoint (RFC 9126)
// with a DPoP proof, then DPoP-bound tokens (RFC 9449) at the token, userinfo, refresh
// and introspection endpoints, the server's nonces handled by the library.
// Environment: ISSUER, CLIENT_ID, CLIENT_SECRET, USERNAME, PASSWORD, REDIRECT_URI,
// SIGNING_JWK (the client's private RSA key as a JWK with its kid).
import * as client from 'openid-client';
import { browserLogin, payload } from './browser_login.mjs';

const env = process.env;
const fail = (what) => { console.error(`openid-client wave-2 interop: ${what}`); process.exit(1); };
const check = (cond, what) => { if (!cond) fail(what); };

const config = await client.discovery(new URL(env.ISSUER), env.CLIENT_ID, env.CLIENT_SECRET, undefined, {
  execute: [client.allowInsecureRequests],
});
const meta = config.serverMetadata();
check(meta.pushed_authorization_request_endpoint === `${env.ISSUER}/par`, 'PAR endpoint in discovery');
check(meta.dpop_signing_alg_values_supported?.includes('ES256'), 'DPoP algorithms in discovery');

const jwk = JSON.parse(env.SIGNING_JWK);
const key = await crypto.subtle.importKey('jwk', jwk, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']);
const DPoP = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));

const verifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const nonce = client.randomNonce();
const signed = await client.buildAuthorizationUrlWithJAR(config, {
  redirect_uri: env.REDIRECT_URI,
  scope: 'openid profile email',
  code_challenge: await client.calculatePKCECodeChallenge(verifier),
  code_challenge_method: 'S256',
  state,
  nonce,
}, { key, kid: jwk.kid });
check(signed.searchParams.has('request') && !signed.searchParams.has('scope'), 'the request object carries the parameters');
const url = await client.buildAuthorizationUrlWithPAR(config, signed.searchParams, { DPoP });
check(url.searchParams.get('request_uri')?.startsWith('urn:ietf:params:oauth:request_uri:'), `PAR request_uri in ${url}`);

const { callback } = await browserLogin(url, env.USERNAME, env.PASSWORD, fail);
const tokens = await client.authorizationCodeGrant(config, callback, {
  pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce,
}, undefined, { DPoP });
check(tokens.token_type === 'dpop', `token_type ${tokens.token_type}`);
const jkt = payload(tokens.access_token).cnf?.jkt;
check(typeof jkt === 'string' && jkt.length === 43, 'cnf.jkt in the access token');
const claims = tokens.claims();
check(claims.preferred_username === env.USERNAME, 'preferred_username in the ID token');

const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub, { DPoP });
check(info.email === `${env.USERNAME}@example.com`, 'userinfo with a DPoP-bound token');

const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP });
check(refreshed.token_type === 'dpop' && payload(refreshed.access_token).cnf?.jkt === jkt, 'refreshed token bound to the same key');

const introspected = await client.tokenIntrospection(config, refreshed.access_token);
check(introspected.active === true && introspected.cnf?.jkt === jkt, `introspection shows the binding: ${JSON.stringify(introspected)}`);
console.log('openid-client wave-2 interop: ok');
