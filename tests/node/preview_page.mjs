// Judge of `kimodo-rig preview OUT.html`: headless Chromium (Debian's) driven by playwright-core.
//   node preview_page.mjs PAGE.html FRAME OTHER_FRAME OUTDIR
// Loads the page from file:// (as a double-click would), records console errors, page errors and every
// request that is not the page itself, lets the player run to its last frame, then opens PAGE.html#frame=N
// for both frames, takes a screenshot of each and reads the bone positions three.js has at that frame.
// Prints one JSON object.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [page_path, frame_text, other_text, outdir] = process.argv.slice(2);
const url = pathToFileURL(page_path).href;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"],
});
const result = { console_errors: [], page_errors: [], requests: [] };
async function open(address) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const page = await context.newPage();
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") result.console_errors.push(m.type() + ": " + m.text()); });
  page.on("pageerror", (e) => result.page_errors.push(String(e)));
  page.on("request", (r) => { if (r.url().split("#")[0] !== url) result.requests.push(r.url().slice(0, 200)); });
  await page.goto(address);
  await page.waitForFunction(() => window.kimodoPreview && (window.kimodoPreview.ready || window.kimodoPreview.error), null, { timeout: 60000 });
  return { context, page };
}

// 1. Plays from the start: does it reach the last frame on its own?
{
  const { context, page } = await open(url);
  result.error = await page.evaluate(() => window.kimodoPreview.error);
  result.frames = await page.evaluate(() => window.kimodoPreview.frameCount);
  result.fps = await page.evaluate(() => window.kimodoPreview.fps);
  const seconds = result.frames / result.fps;
  try {
    await page.waitForFunction(() => window.kimodoPreview.lastFrameReached, null, { timeout: (seconds + 30) * 1000 });
    result.reached_last_frame = true;
  } catch (e) {
    result.reached_last_frame = false;
  }
  await context.close();
}
// 2. Opened at #frame=N: the frame shown, a screenshot and three.js's bone positions.
result.shots = {};
for (const n of [frame_text, other_text]) {
  const { context, page } = await open(url + "#frame=" + n);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const frame = await page.evaluate(() => window.kimodoPreview.frame());
  const bones = await page.evaluate(() => window.kimodoPreview.bonePositions());
  const file = outdir + "/frame_" + n + ".png";
  await page.locator("#view canvas").screenshot({ path: file });
  result.shots[n] = { frame, bones, file };
  await context.close();
}
await browser.close();
console.log(JSON.stringify(result));
