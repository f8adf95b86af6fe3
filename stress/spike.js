// Spike: 0 → 10 → 100 virtual users, hold a minute, back down; 0.5 s think time.
import { sleep } from 'k6';
import { baseThresholds, flow } from './lib/flow.js';

export const options = {
  stages: [
    { duration: '10s', target: 10 },
    { duration: '10s', target: 100 },
    { duration: '1m', target: 100 },
    { duration: '10s', target: 0 },
  ],
  thresholds: { ...baseThresholds, step_token: ['p(95)<100'], step_introspect: ['p(95)<100'] },
};

export default function () {
  flow();
  sleep(0.5);
}
