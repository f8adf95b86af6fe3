// One iteration of the full PKCE flow against Tessera, as a browser and a relying
// party perform it: authorize → login form → sign in → code → token → introspect →
// refresh. Every step is checked; a failed step fails the iteration.
import http from 'k6/http';
import { check } from 'k6';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';
import { Counter, Rate, Trend } from 'k6/metrics';

export const ISSUER = (__ENV.TESSERA_ISSUER || 'http://127.0.0.1:9100').replace(/\/$/, '');
const CLIENT_ID = __ENV.STRESS_CLIENT_ID || 'stress';
const CLIENT_SECRET = __ENV.STRESS_CLIENT_SECRET || '';
const REDIRECT_URI = __ENV.STRESS_REDIRECT_URI || 'http://127.0.0.1:9999/callback';
const USER_PREFIX = __ENV.STRESS_USER_PREFIX || 'stress';
const USERS = parseInt(__ENV.STRESS_USERS || '500', 10);
const PASSWORD = __ENV.STRESS_PASSWORD || 'stress-password';
const BASIC = `Basic ${encoding.b64encode(`${CLIENT_ID}:${CLIENT_SECRET}`)}`;

export const steps = {
  authorize: new Trend('step_authorize', true),
  login: new Trend('step_login', true),
  token: new Trend('step_token', true),
  introspect: new Trend('step_introspect', true),
  refresh: new Trend('step_refresh', true),
};
export const iterationsOk = new Counter('iterations_ok');
export const iterationFailed = new Rate('iteration_failed');

/** Thresholds every scenario shares: no failed iteration, fast token-side steps. */
export const baseThresholds = {
  iteration_failed: ['rate==0'],
  checks: ['rate==1'],
  step_token: ['p(95)<1000'],
  step_introspect: ['p(95)<1000'],
  step_refresh: ['p(95)<1000'],
};

function randomUrlSafe(n) {
  return encoding.b64encode(crypto.randomBytes(n), 'rawurl');
}

function hidden(res, name) {
  return res.html().find(`input[name=${name}]`).attr('value');
}

function fail(step) {
  iterationFailed.add(1);
  return false;
}

/** One full iteration; returns whether every step succeeded. */
export function flow() {
  const jar = new http.CookieJar();
  const verifier = randomUrlSafe(32);
  const challenge = crypto.sha256(verifier, 'base64rawurl');
  const query = [
    ['client_id', CLIENT_ID], ['redirect_uri', REDIRECT_URI], ['response_type', 'code'],
    ['scope', 'openid profile email'], ['state', randomUrlSafe(12)], ['nonce', randomUrlSafe(12)],
    ['code_challenge', challenge], ['code_challenge_method', 'S256'],
  ].map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');

  const page = http.get(`${ISSUER}/authorize?${query}`, { jar, redirects: 0, tags: { step: 'authorize' } });
  if (!check(page, { 'authorize: login form': (r) => r.status === 200 && !!hidden(r, 'request_id') })) {
    return fail('authorize');
  }
  steps.authorize.add(page.timings.duration);

  const user = `${USER_PREFIX}${((__VU - 1) % USERS) + 1}`;
  const login = http.post(`${ISSUER}/login`, {
    request_id: hidden(page, 'request_id'), csrf: hidden(page, 'csrf'), username: user, password: PASSWORD,
  }, { jar, redirects: 0, tags: { step: 'login' } });
  const location = login.headers.Location || '';
  const match = /[?&]code=([^&]+)/.exec(location);
  if (!check(login, { 'login: redirect with code': (r) => r.status === 303 && !!match })) {
    return fail('login');
  }
  steps.login.add(login.timings.duration);

  const auth = { headers: { Authorization: BASIC } };
  const token = http.post(`${ISSUER}/token`, {
    grant_type: 'authorization_code', code: decodeURIComponent(match[1]), redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  }, { ...auth, tags: { step: 'token' } });
  if (!check(token, { 'token: 200 with tokens': (r) => r.status === 200 && !!r.json('refresh_token') })) {
    return fail('token');
  }
  steps.token.add(token.timings.duration);

  const intro = http.post(`${ISSUER}/introspect`, { token: token.json('access_token') },
    { ...auth, tags: { step: 'introspect' } });
  if (!check(intro, { 'introspect: active': (r) => r.status === 200 && r.json('active') === true })) {
    return fail('introspect');
  }
  steps.introspect.add(intro.timings.duration);

  const refresh = http.post(`${ISSUER}/token`, {
    grant_type: 'refresh_token', refresh_token: token.json('refresh_token'),
  }, { ...auth, tags: { step: 'refresh' } });
  if (!check(refresh, { 'refresh: 200': (r) => r.status === 200 && !!r.json('access_token') })) {
    return fail('refresh');
  }
  steps.refresh.add(refresh.timings.duration);
  iterationFailed.add(0);
  iterationsOk.add(1);
  return true;
}
