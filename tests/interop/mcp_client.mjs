// An agent client the way MCP clients connect (the MCP authorization profile): no prior
// registration. It serves its own client ID metadata document, uses that document's URL
// as its client_id, and signs in as a public client with PKCE, a resource indicator
// (RFC 8707) and DPoP-bound tokens (RFC 9449), refreshing with the bound refresh token.
// Environment: ISSUER, USERNAME, PASSWORD, RESOURCE.
import http from 'node:http';
import * as client from 'openid-client';
import { browserLogin, payload } from './browser_login.mjs';

const env = process.env;
const fail = (what) => { console.error(`MCP-style client interop: ${what}`); process.exit(1); };
const check = (cond, what) => { if (!cond) fail(what); };

let fetched = 0;
let document;
const server = http.createServer((req, res) => {
  if (req.url !== '/oauth/client.json') { res.writeHead(404).end(); return; }
  fetched += 1;
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' });
  res.end(JSON.stringify(document));
});
await new Promise((ready) => server.listen(0, '127.0.0.1', ready));
const base = `http://127.0.0.1:${server.address().port}`;
const clientId = `${base}/oauth/client.json`;
const redirectUri = `${base}/callback`;
document = {
  client_id: clientId,
  client_name: 'Agent inspector (test)',
  client_uri: base,
  redirect_uris: [redirectUri],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
};

const config = await client.discovery(new URL(env.ISSUER), clientId, undefined, client.None(), {
  execute: [client.allowInsecureRequests],
});
check(config.serverMetadata().client_id_metadata_document_supported === true, 'metadata documents advertised');
const DPoP = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
const verifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: redirectUri,
  scope: 'openid profile offline_access',
  code_challenge: await client.calculatePKCECodeChallenge(verifier),
  code_challenge_method: 'S256',
  resource: env.RESOURCE,
  state,
});
const { callback } = await browserLogin(url, env.USERNAME, env.PASSWORD, fail);
check(callback.href.startsWith(redirectUri), `redirected to ${callback}`);
const tokens = await client.authorizationCodeGrant(config, callback, {
  pkceCodeVerifier: verifier, expectedState: state,
}, { resource: env.RESOURCE }, { DPoP });
check(tokens.token_type === 'dpop', `token_type ${tokens.token_type}`);
const at = payload(tokens.access_token);
check(at.aud === env.RESOURCE, `audience ${JSON.stringify(at.aud)}`);
check(at.client_id === clientId && typeof at.cnf?.jkt === 'string', 'bound to the key, for the document client');
check(typeof tokens.refresh_token === 'string', 'a refresh token for offline_access');

const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, { resource: env.RESOURCE }, { DPoP });
check(refreshed.token_type === 'dpop' && payload(refreshed.access_token).cnf.jkt === at.cnf.jkt, 'refresh keeps the binding');
check(refreshed.refresh_token === undefined, 'a sender-constrained refresh token is not rotated');
const again = await client.refreshTokenGrant(config, tokens.refresh_token, { resource: env.RESOURCE }, { DPoP });
check(typeof again.access_token === 'string', 'the bound refresh token keeps working');

const stolen = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
const refused = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP: stolen }).then(
  () => null, (e) => e,
);
check(refused?.error === 'invalid_grant', `another key refused: ${refused}`);
check(fetched === 1, `the document was fetched once and cached (${fetched} fetches)`);
server.close();
console.log('MCP-style client interop: ok');
