// RFC 6238 TOTP (SHA-1, 6 digits, 30 s steps) for a base32 secret, as an
// authenticator app computes it: shared by the browser journeys.

import { createHmac } from "node:crypto";

function base32(text) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0, value = 0;
  const out = [];
  for (const c of text.replace(/[\s=]/g, "").toUpperCase()) {
    value = (value << 5) | alphabet.indexOf(c);
    bits += 5;
    if (bits >= 8) { bits -= 8; out.push((value >>> bits) & 0xff); }
  }
  return Buffer.from(out);
}

// The code of the step that holds `unix` (seconds).
export function totp(secret, unix) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(unix / 30)));
  const mac = createHmac("sha1", base32(secret)).update(counter).digest();
  const off = mac[19] & 0x0f;
  const n = (mac.readUInt32BE(off) & 0x7fffffff) % 1_000_000;
  return String(n).padStart(6, "0");
}
