// Load: 20 virtual users for 3 minutes, 1 s think time (Autentico's 20-VU shape).
import { sleep } from 'k6';
import { baseThresholds, flow } from './lib/flow.js';

export const options = {
  vus: 20,
  duration: '3m',
  thresholds: { ...baseThresholds, step_login: ['p(95)<2000'], step_token: ['p(95)<100'] },
};

export default function () {
  flow();
  sleep(1);
}
