// Drives Debian's Chromium through apps protected by forward-auth behind real proxies:
// an app behind nginx (auth_request) sends the browser to sign in at Tessera, which
// sends it back with the tessera_fa cookie on the shared domain; the app behind Caddy
// (forward_auth) then opens without signing in again; signing out at Tessera cuts
// both; a user outside the apps' group is refused. The apps echo the request headers
// they got as JSON, so the page shows what reached them. Every page is screenshotted
// into $SHOTS.
//
// Environment: ISSUER (Tessera's issuer, http://auth.example.test:PORT), NGINX_APP and
// CADDY_APP (the apps' URLs through each proxy), USERNAME and PASSWORD (a member of
// the apps' group), OUTSIDER (a user outside it, same password), SHOTS, CHROMIUM. The
// host names are mapped to 127.0.0.1 inside Chromium.

import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const { ISSUER, NGINX_APP, CADDY_APP, USERNAME, PASSWORD, OUTSIDER, SHOTS } = process.env;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
if (!ISSUER || !NGINX_APP || !CADDY_APP || !USERNAME || !PASSWORD || !OUTSIDER || !SHOTS) {
  throw new Error("ISSUER, NGINX_APP, CADDY_APP, USERNAME, PASSWORD, OUTSIDER and SHOTS are required");
}
mkdirSync(SHOTS, { recursive: true });

function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         // Every test host is on loopback; the ports are in the URLs.
         "--host-resolver-rules=MAP *.example.test 127.0.0.1"],
});
let shot = 0;
async function snap(page, name) {
  shot += 1;
  const file = `${SHOTS}/${String(shot).padStart(2, "0")}-${name}.png`;
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot ${file}`);
}
const originOf = (u) => new URL(u).origin;

// The app's echo of the request it received: { target, headers: [[name, value], …] }.
async function echoed(page) {
  const seen = JSON.parse(await page.textContent("body"));
  const all = (name) => seen.headers.filter(([n]) => n === name).map(([, v]) => v);
  return { target: seen.target, all };
}

async function signIn(page, username) {
  check(originOf(page.url()) === ISSUER, `on Tessera's login page (${page.url()})`);
  check(new URL(page.url()).pathname === "/authz/sign-in", `the forward-auth sign-in (${page.url()})`);
  await page.fill("#username", username);
  await page.fill("#password", PASSWORD);
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click('form[action="/login"] button[type=submit]')]);
}

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10000);

  // 1. The app behind nginx: not signed in, so to Tessera's login page.
  const nginxUrl = `${NGINX_APP}/dashboard?tab=today`;
  await page.goto(nginxUrl);
  await snap(page, "nginx-app-asks-to-sign-in");
  await signIn(page, USERNAME);

  // 2. Back at the app, which was told who signed in and nothing a client made up.
  check(page.url() === nginxUrl, `back at the nginx app (${page.url()})`);
  let seen = await echoed(page);
  check(seen.target === "/dashboard?tab=today", `the path asked for reached the app (${seen.target})`);
  check(seen.all("remote-user").join() === USERNAME, `Remote-User is ${USERNAME} (${seen.all("remote-user")})`);
  check(seen.all("remote-groups").join().split(",").includes("staff"), "Remote-Groups has staff");
  // The browser sent tessera_fa to the app's host, and nginx kept it from the app.
  check(!seen.all("cookie").join().includes("tessera_fa"), `the app never sees tessera_fa (${seen.all("cookie")})`);
  await snap(page, "nginx-app-signed-in");
  const cookies = await context.cookies(ISSUER);
  const fa = cookies.find((c) => c.name === "tessera_fa");
  check(fa && fa.domain.replace(/^\./, "") === "example.test", `tessera_fa on example.test (${JSON.stringify(fa)})`);
  check(fa.httpOnly && fa.sameSite === "Lax", "tessera_fa is HttpOnly and SameSite=Lax");

  // 3. The app behind Caddy opens at once: the cookie covers its host too.
  await page.goto(`${CADDY_APP}/`);
  check(originOf(page.url()) === CADDY_APP, `the Caddy app, no sign-in asked (${page.url()})`);
  seen = await echoed(page);
  check(seen.all("remote-user").join() === USERNAME, `Remote-User through Caddy (${seen.all("remote-user")})`);
  check(!seen.all("cookie").join().includes("tessera_fa"), `Caddy keeps tessera_fa from the app (${seen.all("cookie")})`);
  await snap(page, "caddy-app-signed-in");

  // 4. Signing out at Tessera ends access through both proxies on the next request.
  await page.goto(`${ISSUER}/logout`);
  await snap(page, "tessera-sign-out");
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click('form[action="/logout/confirm"] button[type=submit]')]);
  check((await page.textContent("body")).includes("Signed out"), "signed out at Tessera");
  await snap(page, "tessera-signed-out");
  for (const app of [NGINX_APP, CADDY_APP]) {
    await page.goto(`${app}/`);
    check(originOf(page.url()) === ISSUER, `${app} asks to sign in again (${page.url()})`);
  }
  await snap(page, "caddy-app-asks-again");

  // 5. Someone outside the apps' group signs in and is refused by the app's rule.
  await signIn(page, OUTSIDER);
  check(originOf(page.url()) === CADDY_APP, `back at the Caddy app (${page.url()})`);
  const refused = await page.textContent("body");
  check(refused.includes("Access refused"), `the refusal page (${refused.slice(0, 200)})`);
  check(!refused.includes("remote-user"), "nothing reached the app");
  await snap(page, "caddy-app-refuses-outsider");

  console.log("forward-auth journey: ok");
} finally {
  await browser.close();
}
