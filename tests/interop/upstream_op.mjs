// An upstream OpenID Provider for the federation tests: node's oidc-provider with one
// confidential client (Tessera), three accounts, a one-field login form, automatic
// consent, Back-Channel Logout 1.0 and signing-key rotation on request.
//
// Environment: PORT (0 or absent: any free port), ISSUER (default http://127.0.0.1:PORT),
// CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, BACKCHANNEL_URI (optional: the client's
// backchannel_logout_uri), POST_LOGOUT_URI (optional: its post_logout_redirect_uris).
// Prints `ready ISSUER` on stdout once listening.
//
// Routes besides oidc-provider's own:
//   GET  /interaction/:uid        the login form (field `login`), or consent granted at once
//   POST /interaction/:uid/login  login=NAME signs NAME in; an unknown name gets the form, 401
//   POST /test/rotate             the next signing key signs from now on; the JWKS keeps the
//                                 old one. Answers {"kid": new, "previous": old}.
//   GET  /test/kid                {"kid": the key signing now}
// Back-channel logout is the real RP-Initiated Logout flow: GET /session/end with the
// browser's cookies, POST /session/end/confirm with its xsrf and logout=yes; the provider
// POSTs a logout token to BACKCHANNEL_URI before it answers (OIDC Back-Channel Logout 1.0 §2.7).
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import Provider, { ExternalSigningKey } from 'oidc-provider';

const env = process.env;
for (const name of ['CLIENT_ID', 'CLIENT_SECRET', 'REDIRECT_URI']) {
  if (!env[name]) { console.error(`upstream_op: ${name} is required`); process.exit(2); }
}

const ACCOUNTS = [
  { sub: 'alice-sub', login: 'alice', email: 'alice@example.org', email_verified: true, name: 'Alice Upstream', groups: ['engineering', 'staff'] },
  { sub: 'bob-sub', login: 'bob', email: 'bob@example.org', email_verified: false, name: 'Bob', groups: [] },
  { sub: 'carol-sub', login: 'carol', email: 'carol@example.org', email_verified: true, name: 'Carol', groups: ['staff'] },
];
const bySub = new Map(ACCOUNTS.map((a) => [a.sub, a]));
const byLogin = new Map(ACCOUNTS.map((a) => [a.login, a]));

// Signing keys. oidc-provider fixes its keystore at construction and signs with the first
// key whose key_ops allow it, so every key of the run is registered up front and
// `key_ops` says which one may sign now; the JWKS document is served here, and lists a
// key only once it has signed, so a relying party meets a kid it has not cached (and has
// to refetch the JWKS, OIDC Core §10.1.1) right after a rotation.
const POOL = 3;
let active = 0;
class PoolKey extends ExternalSigningKey {
  #private; #public; #index;
  constructor(index) {
    super();
    const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.#private = privateKey; this.#public = publicKey; this.#index = index;
    this.kid = `upstream-${index}-${crypto.randomBytes(4).toString('hex')}`;
    this.alg = 'RS256';
  }
  get key_ops() { return this.#index === active ? undefined : ['verify']; }
  get published() { return this.#index <= active; }
  keyObject() { return this.#public; }
  sign(data) { return crypto.sign('sha256', data, this.#private); }
  jwk() { return { kty: 'RSA', use: 'sig', alg: 'RS256', kid: this.kid, n: this.n, e: this.e }; }
}
const keys = Array.from({ length: POOL }, (_, i) => new PoolKey(i));

const page = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head>`
  + `<body><h1>${title}</h1>${body}</body></html>`;
const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const loginForm = (uid, error) => page('Upstream sign-in', `${error ? `<p role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label>Login <input name="login" autofocus></label> <button type="submit">Sign in</button></form>`);

const server = http.createServer();
await new Promise((resolve) => server.listen(Number(env.PORT || 0), '127.0.0.1', resolve));
const issuer = env.ISSUER || `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: env.CLIENT_ID,
    client_secret: env.CLIENT_SECRET,
    redirect_uris: [env.REDIRECT_URI],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...(env.BACKCHANNEL_URI ? {
      backchannel_logout_uri: env.BACKCHANNEL_URI,
      backchannel_logout_session_required: true,
    } : {}),
    ...(env.POST_LOGOUT_URI ? { post_logout_redirect_uris: [env.POST_LOGOUT_URI] } : {}),
  }],
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  // Claims granted by scope go into the ID token as well as userinfo (OIDC Core §5.4
  // puts them in userinfo only when an access token is issued; oidc-provider conforms
  // unless told not to).
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  jwks: { keys },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  ttl: {
    AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Interaction: 600, Session: 3600, Grant: 3600,
  },
  features: {
    devInteractions: { enabled: false },
    backchannelLogout: { enabled: true },
    externalSigningSupport: { enabled: true, ack: 'experimental-01' },
    rpInitiatedLogout: {
      enabled: true,
      // The form oidc-provider hands over carries the xsrf token; logout=yes ends the
      // whole session (and so sends the logout tokens), and the script spares the click.
      async logoutSource(ctx, form) {
        ctx.body = page('Sign out', form.replace('</form>',
          '<input type="hidden" name="logout" value="yes"><button type="submit">Sign out</button></form>')
          + '<script>document.forms[0].submit()</script>');
      },
      async postLogoutSuccessSource(ctx) { ctx.body = page('Signed out', '<p>You are signed out upstream.</p>'); },
    },
  },
  async findAccount(ctx, sub) {
    const account = bySub.get(sub);
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          email: account.email,
          email_verified: account.email_verified,
          name: account.name,
          preferred_username: account.login,
          groups: account.groups,
        };
      },
    };
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Upstream error', Object.entries(out).map(([k, v]) => `<p><b>${escape(k)}</b>: ${escape(v)}</p>`).join(''));
  },
  // Outgoing requests (the logout tokens) go to loopback, which oidc-provider's SSRF
  // guard refuses; the guard rides on options.dispatcher, so it is dropped here.
  fetch(url, { dispatcher, ...options }) { return globalThis.fetch(url, options); },
});

provider.on('backchannel.error', (ctx, err, client, accountId, sid) => {
  console.error(`upstream_op: back-channel logout of ${accountId} (${sid}) failed: ${err.message}`);
});
provider.on('server_error', (ctx, err) => console.error('upstream_op: server_error', err));

async function formBody(req) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return new URLSearchParams(raw);
}

// The interaction pages and test routes, ahead of oidc-provider's router.
provider.use(async (ctx, next) => {
  const path = ctx.path;
  if (ctx.method === 'GET' && path === '/jwks') {
    ctx.type = 'application/jwk-set+json';
    ctx.set('cache-control', 'no-store');
    ctx.body = { keys: keys.filter((k) => k.published).reverse().map((k) => k.jwk()) };
    return;
  }
  if (ctx.method === 'POST' && path === '/test/rotate') {
    if (active + 1 >= POOL) { ctx.status = 409; ctx.body = { error: `only ${POOL} keys in this run` }; return; }
    const previous = keys[active].kid;
    active += 1;
    ctx.body = { kid: keys[active].kid, previous };
    return;
  }
  if (ctx.method === 'GET' && path === '/test/kid') { ctx.body = { kid: keys[active].kid }; return; }

  const match = /^\/interaction\/([^/]+)(\/login)?$/.exec(path);
  if (!match) return next();
  let details;
  try {
    details = await provider.interactionDetails(ctx.req, ctx.res);
  } catch (err) {
    ctx.status = 400; ctx.type = 'html'; ctx.body = page('Upstream error', `<p>${escape(err.message)}</p>`);
    return;
  }
  const { uid, prompt, params, session, grantId } = details;
  let result;
  if (match[2] && ctx.method === 'POST') {
    const account = byLogin.get((await formBody(ctx.req)).get('login') || '');
    if (!account) { ctx.status = 401; ctx.type = 'html'; ctx.body = loginForm(uid, 'Unknown login.'); return; }
    result = { login: { accountId: account.sub, amr: ['pwd'] } };
  } else if (ctx.method === 'GET' && prompt.name === 'login') {
    ctx.type = 'html'; ctx.body = loginForm(uid); return;
  } else if (ctx.method === 'GET' && prompt.name === 'consent') {
    // Granted as asked: the tests exercise Tessera, not a consent page.
    const grant = grantId ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
    if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
    if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  } else {
    ctx.status = 405; return;
  }
  const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
  ctx.status = 303;
  ctx.redirect(returnTo);
});

server.on('request', provider.callback());
console.log(`ready ${issuer}`);
process.on('SIGTERM', () => process.exit(0));
