// Rate limit: 50 login attempts per second from one address; the limiter must answer
// 429 with Retry-After. Run against a server with rate limiting on.
import http from 'k6/http';
import { check } from 'k6';
import { Rate } from 'k6/metrics';
import { ISSUER } from './lib/flow.js';

const limited = new Rate('limited_with_retry_after');

export const options = {
  scenarios: {
    logins: { executor: 'constant-arrival-rate', rate: 50, timeUnit: '1s', duration: '30s', preAllocatedVUs: 50 },
  },
  thresholds: { limited_with_retry_after: ['rate>0.5'] },
};

export default function () {
  const res = http.post(`${ISSUER}/login`, { request_id: 'x', csrf: 'x', username: 'nobody', password: 'wrong' },
    { redirects: 0 });
  const ok = res.status === 429 && !!res.headers['Retry-After'];
  limited.add(ok);
  check(res, { 'not a server error': (r) => r.status < 500 });
}
