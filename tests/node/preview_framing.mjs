// Judge of what `kimodo-rig preview OUT.html` shows: is the character in view, and drawn?
//   node preview_framing.mjs PAGE.html STEP [OUTDIR]   (OUTDIR: keep the screenshots, to look at)
// Headless Chromium (Debian's) driven by playwright-core. Opens the page, switches Kimodo's skeleton overlay
// off when it is on, and at every STEP-th frame: measures the box of every mesh of the drawn character with
// three.js's own precise (skinned) bounds, projects its 8 corners with the page's camera, and takes two
// screenshots of the canvas, with the character and with it hidden; the screenshots are decoded in the page
// from their PNG bytes and compared pixel by pixel inside the projected box. Prints one JSON object.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

import { writeFileSync } from "node:fs";

const [page_path, step_text, outdir] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"],
});
const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
const page = await context.newPage();
const result = { page_errors: [], frames: [] };
page.on("pageerror", (e) => result.page_errors.push(String(e)));
await page.goto(pathToFileURL(page_path).href + "#frame=0");
await page.waitForFunction(() => window.kimodoPreview && (window.kimodoPreview.ready || window.kimodoPreview.error), null, { timeout: 120000 });
result.error = await page.evaluate(() => window.kimodoPreview.error);
result.report = await page.evaluate(() => document.getElementById("report").textContent);
await page.evaluate(() => { const box = document.getElementById("skeleton"); if (box && box.checked) box.click(); });
const count = await page.evaluate(() => window.kimodoPreview.frameCount);
const canvas = page.locator("#view canvas");

async function shot(characterVisible) {
  await page.evaluate((visible) => { window.kimodoPreview.view().character.visible = visible; }, characterVisible);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  return (await canvas.screenshot()).toString("base64");
}

for (let n = 0; n < count; n += Number(step_text)) {
  const measured = await page.evaluate((n) => {
    const api = window.kimodoPreview;
    api.setFrame(n);
    const { camera, character } = api.view();
    character.updateMatrixWorld(true);
    const box = new THREE.Box3();
    character.traverse((o) => { if (o.isSkinnedMesh) o.skeleton.update(); });
    character.traverse((o) => { if (o.isMesh && o.visible) box.union(new THREE.Box3().expandByObject(o, true)); });
    camera.updateMatrixWorld(true);
    const corners = [];
    for (const x of [box.min.x, box.max.x]) for (const y of [box.min.y, box.max.y]) for (const z of [box.min.z, box.max.z]) {
      const p = new THREE.Vector3(x, y, z).project(camera);
      corners.push([p.x, p.y, p.z]);
    }
    return { frame: api.frame(), box: [box.min.toArray(), box.max.toArray()], corners };
  }, n);
  const withCharacter = await shot(true), without = await shot(false);
  if (outdir) writeFileSync(outdir + "/frame_" + n + ".png", Buffer.from(withCharacter, "base64"));
  await page.evaluate(() => { window.kimodoPreview.view().character.visible = true; });
  measured.pixels = await page.evaluate(async ([a, b, corners]) => {
    async function pixels(base64) {
      const image = new Image();
      image.src = "data:image/png;base64," + base64;
      await image.decode();
      const canvas = document.createElement("canvas");
      canvas.width = image.width; canvas.height = image.height;
      const context = canvas.getContext("2d");
      context.drawImage(image, 0, 0);
      return context.getImageData(0, 0, image.width, image.height);
    }
    const first = await pixels(a), second = await pixels(b);
    const w = first.width, h = first.height;
    const xs = corners.map((c) => (c[0] + 1) / 2 * w), ys = corners.map((c) => (1 - c[1]) / 2 * h);
    const left = Math.max(0, Math.floor(Math.min(...xs))), right = Math.min(w, Math.ceil(Math.max(...xs)));
    const top = Math.max(0, Math.floor(Math.min(...ys))), bottom = Math.min(h, Math.ceil(Math.max(...ys)));
    let inside = 0, outside = 0;
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      const differs = Math.abs(first.data[i] - second.data[i]) + Math.abs(first.data[i + 1] - second.data[i + 1])
          + Math.abs(first.data[i + 2] - second.data[i + 2]) > 30;
      if (!differs) continue;
      if (x >= left && x < right && y >= top && y < bottom) inside++; else outside++;
    }
    return { width: w, height: h, rect: [left, top, right, bottom], character_inside: inside, character_outside: outside };
  }, [withCharacter, without, measured.corners]);
  result.frames.push(measured);
}
await browser.close();
console.log(JSON.stringify(result));
