// The peer for side-by-side runs: node oidc-provider configured like Tessera's stress
// server (stress/server.sh), answering on the same paths so one driver runs both.
//
// Like Tessera: one confidential client with client_secret_basic and PKCE required,
// STRESS_USERS users whose passwords are checked with bcrypt (the native `bcrypt`
// package, in C, at cost 10 unless BCRYPT_COST), refresh tokens rotated on every use,
// opaque access tokens, introspection on. oidc-provider keeps offline_access (and so
// issues refresh tokens) only with prompt=consent (OpenID Connect Core §11), so the
// driver asks for both; the sign-in form grants consent with the login, as Tessera does
// for a first-party client. Its in-memory store is an LRU of 1,000 entries by default,
// which evicts live codes and sessions under load: it is raised far above what a run
// holds.
//
// Environment: PEER_PORT (9200), STRESS_USERS (500), STRESS_PASSWORD, STRESS_CLIENT_SECRET.

import crypto from 'node:crypto';
import http from 'node:http';

import bcrypt from 'bcrypt';
import Provider from 'oidc-provider';
import { setStorage } from 'oidc-provider/lib/adapters/memory_adapter.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';

const port = Number(process.env.PEER_PORT ?? 9200);
const issuer = `http://127.0.0.1:${port}`;
const users = Number(process.env.STRESS_USERS ?? 500);
const password = process.env.STRESS_PASSWORD ?? 'stress-password';
const clientSecret = process.env.STRESS_CLIENT_SECRET ?? crypto.randomBytes(32).toString('base64url');
const cost = Number(process.env.BCRYPT_COST ?? 10);

setStorage(new LRU({ maxSize: 10_000_000 }));

// One hash for every user, as `tessera user seed` does; each login still verifies it.
const hash = await bcrypt.hash(password, cost);
const dummy = await bcrypt.hash(crypto.randomBytes(16).toString('hex'), cost);
const accounts = new Map();
for (let i = 1; i <= users; i += 1) accounts.set(`stress${i}`, hash);

const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'peer-rs256', use: 'sig', alg: 'RS256' };
const csrfKey = crypto.randomBytes(32);

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'stress',
    client_secret: clientSecret,
    redirect_uris: ['http://127.0.0.1:9999/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [jwk] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  pkce: { required: () => true },
  features: { introspection: { enabled: true }, devInteractions: { enabled: false } },
  rotateRefreshToken: true,
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'] },
  findAccount: async (ctx, id) => (accounts.has(id) ? {
    accountId: id,
    claims: async () => ({
      sub: id, email: `${id}@stress.invalid`, email_verified: true, name: id, preferred_username: id,
    }),
  } : undefined),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  routes: {
    authorization: '/authorize', token: '/token', introspection: '/introspect', jwks: '/jwks', userinfo: '/userinfo',
  },
  ttl: {
    AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Interaction: 600, Grant: 14 * 86400,
    RefreshToken: 14 * 86400, Session: 14 * 86400,
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

const csrfOf = (uid) => crypto.createHmac('sha256', csrfKey).update(uid).digest('base64url');

function loginForm(res, uid, status = 200) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!doctype html><title>Sign in</title><form method="post" action="/login">
<input type="hidden" name="request_id" value="${uid}"><input type="hidden" name="csrf" value="${csrfOf(uid)}">
<input name="username" autocomplete="username"><input type="password" name="password" autocomplete="current-password">
<button>Sign in</button></form>`);
}

function refuse(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 8192) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

// Consent with the login: the grant holds every scope the request named.
async function finish(req, res, details, accountId) {
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, {
    mergeWithLastSubmission: false,
  });
}

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === 'login') return loginForm(res, details.uid);
  // Signed in already: only the consent prompt is left, granted as at sign-in.
  return finish(req, res, details, details.session.accountId);
}

async function login(req, res) {
  const form = await readForm(req);
  const details = await provider.interactionDetails(req, res);
  const uid = form.get('request_id') ?? '';
  const csrf = Buffer.from(form.get('csrf') ?? '');
  const expected = Buffer.from(csrfOf(details.uid));
  if (uid !== details.uid || csrf.length !== expected.length || !crypto.timingSafeEqual(csrf, expected)) {
    console.error('POST /login: the form does not match its interaction');
    return refuse(res, 400, 'the sign-in form has expired');
  }
  const username = form.get('username') ?? '';
  const stored = accounts.get(username);
  const ok = await bcrypt.compare(form.get('password') ?? '', stored ?? dummy);
  if (!ok || !stored) return loginForm(res, details.uid, 401);
  return finish(req, res, details, username);
}

const callback = provider.callback();
http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  let handled;
  if (path === '/healthz' || path === '/readyz') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
    return;
  }
  if (req.method === 'GET' && path.startsWith('/interaction/')) handled = interaction(req, res);
  else if (req.method === 'POST' && path === '/login') handled = login(req, res);
  else {
    callback(req, res);
    return;
  }
  handled.catch((err) => {
    // The reason goes to the log: the driver sees only the status.
    console.error(`${req.method} ${path}: ${err.name ?? 'Error'}: ${err.error_description ?? err.message ?? err}`);
    if (!res.headersSent) refuse(res, 400, err.message ?? 'bad request');
    else res.end();
  });
}).listen(port, '127.0.0.1', () => {
  console.error(`# oidc-provider peer on ${issuer} (${users} users, bcrypt cost ${cost})`);
});
