// Passkey-only accounts (`--passkey-mode passkey-only`) in Chromium with its virtual
// authenticator: an invitation accepted with a passkey and no password, the username
// step asking that account for its passkey alone, and a confirmation with the passkey
// before adding a second one. Screenshots go to $SHOTS.
//
// Environment: BASE (Tessera's issuer URL), INVITE (the invitation link), SHOTS,
// CHROMIUM (default /usr/bin/chromium).

import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const { BASE, INVITE, SHOTS } = process.env;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
if (!BASE || !INVITE || !SHOTS) throw new Error("BASE, INVITE and SHOTS are required");
mkdirSync(SHOTS, { recursive: true });

function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}
let shot = 0;
async function snap(page, name) {
  shot += 1;
  await page.screenshot({ path: `${SHOTS}/${String(shot).padStart(2, "0")}-${name}.png`, fullPage: true });
}
async function submit(page, selector) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
});
const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
const page = await context.newPage();
// The steps are walked one by one: the autofill's conditional request stays off.
await page.addInitScript(() => {
  if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);
});
const cdp = await context.newCDPSession(page);
await cdp.send("WebAuthn.enable");
await cdp.send("WebAuthn.addVirtualAuthenticator", { options: {
  protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true,
  isUserVerified: true, automaticPresenceSimulation: true } });

// 1. The invitation: a username and a passkey, no password fields.
await page.goto(INVITE);
check(!(await page.isVisible("input[type=password]")), "no password is asked for");
check(await page.isVisible("#passkey-enrol"), "the passkey button is shown");
await page.fill("#username", "iris");
await snap(page, "invitation-passkey-only");
await submit(page, "#passkey-enrol");
check((await page.textContent("h1")).includes("ready"), `the account is made (${await page.textContent("body")})`);
await snap(page, "account-ready");

// 2. The username, then the passkey alone.
await page.goto(`${BASE}/account`);
await page.fill("#username", "iris");
await submit(page, "#username-next");
check(await page.isVisible("#passkey-login"), "the passkey is asked for");
check(!(await page.isVisible("#password")), "there is no password to fall back on");
await snap(page, "passkey-only-step");
await Promise.all([page.waitForURL(`${BASE}/account**`), page.click("#passkey-login")]);
check((await page.textContent("body")).includes("iris"), "signed in with the passkey");

// 3. A confirmation with the passkey (no password to ask for).
await page.goto(`${BASE}/account/confirm?next=passkey`);
check(!(await page.isVisible("input[type=password]")), "the confirmation asks for no password");
check(await page.isVisible("#passkey-confirm"), "it asks for a passkey");
await snap(page, "confirm-with-passkey");
await Promise.all([page.waitForURL((u) => u.hash === "#passkeys-h"), page.click("#passkey-confirm")]);
check(page.url().includes("#passkeys-h"), `back at the passkeys (${page.url()})`);

await browser.close();
console.log("passkey-only complete");
