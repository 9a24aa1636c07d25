// three's own meshopt decoder (examples/jsm/libs/meshopt_decoder.module.js, WebAssembly) on every attribute
// stream of a .glb named on the command line: prints {buffer view index: decoded bytes as hex}, filters applied.
// The judge of kimodo_rig/formats/meshopt.py (tests/test_meshopt.py). three is found in $KIMODO_NODE_MODULES.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const modules = process.env.KIMODO_NODE_MODULES || path.join(path.dirname(new URL(import.meta.url).pathname), "node_modules");
const { MeshoptDecoder } = await import(pathToFileURL(path.join(modules, "three", "examples", "jsm", "libs", "meshopt_decoder.module.js")).href);
await MeshoptDecoder.ready;
const data = fs.readFileSync(process.argv[2]);
const n = data.readUInt32LE(12);
const gltf = JSON.parse(data.subarray(20, 20 + n).toString());
const bin = data.subarray(20 + n + 8);
const out = {};
gltf.bufferViews.forEach((v, i) => {
  const e = (v.extensions || {}).EXT_meshopt_compression || (v.extensions || {}).KHR_meshopt_compression;
  if (!e || e.mode !== "ATTRIBUTES") return;
  const src = new Uint8Array(bin.buffer, bin.byteOffset + (e.byteOffset || 0), e.byteLength);
  const target = new Uint8Array(e.count * e.byteStride);
  MeshoptDecoder.decodeGltfBuffer(target, e.count, e.byteStride, src, e.mode, e.filter || "NONE");
  out[i] = Buffer.from(target).toString("hex");
});
console.log(JSON.stringify(out));
