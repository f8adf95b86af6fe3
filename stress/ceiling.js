// Ceiling: 0 → 50 → 100 → 200 → 300 → 500 virtual users, 30 s each, then hold 500 for a
// minute; 0.5 s think time. Logins queue behind password hashing (graceful waiting);
// token-side steps must stay fast and nothing may fail.
import { sleep } from 'k6';
import { baseThresholds, flow } from './lib/flow.js';

export const options = {
  stages: [
    { duration: '30s', target: 50 },
    { duration: '30s', target: 100 },
    { duration: '30s', target: 200 },
    { duration: '30s', target: 300 },
    { duration: '30s', target: 500 },
    { duration: '1m', target: 500 },
  ],
  thresholds: { ...baseThresholds, step_token: ['p(95)<100'], step_introspect: ['p(95)<100'], step_refresh: ['p(95)<100'] },
};

export default function () {
  flow();
  sleep(0.5);
}
