// Smoke: one virtual user for 30 s, 1 s think time. Does the flow work at all?
import { sleep } from 'k6';
import { baseThresholds, flow } from './lib/flow.js';

export const options = {
  vus: 1,
  duration: '30s',
  thresholds: { ...baseThresholds, step_login: ['p(95)<1000'] },
};

export default function () {
  flow();
  sleep(1);
}
