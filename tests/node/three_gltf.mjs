// three's own GLTFLoader, loaded for the judges run in Node (three_pose.mjs, feet_judge.mjs): three is found in
// $KIMODO_NODE_MODULES (else node_modules beside this script): ES modules ignore NODE_PATH.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.KIMODO_NODE_MODULES || path.join(here, "node_modules");
export const THREE = await import(pathToFileURL(path.join(modules, "three", "build", "three.module.js")).href);
export const { GLTFLoader } = await import(
  pathToFileURL(path.join(modules, "three", "examples", "jsm", "loaders", "GLTFLoader.js")).href
);
// three's own meshopt decoder (WebAssembly), so files gltfpack compressed load as in a browser.
const { MeshoptDecoder } = await import(
  pathToFileURL(path.join(modules, "three", "examples", "jsm", "libs", "meshopt_decoder.module.js")).href
);
await MeshoptDecoder.ready;

// Whatever three says while loading is part of the verdict, so it is collected, not lost in stderr.
export const messages = [];
for (const level of ["warn", "error"]) {
  console[level] = (...parts) => messages.push(level + ": " + parts.map(String).join(" "));
}

// GLTFLoader's image path needs a browser (self.URL, an image decoder): in Node it throws "self is not defined"
// on the first image. Textures become empty Texture objects (counted); bones and geometry load as in a browser.
let texturesStubbed = 0;
export const stubbedTextures = () => texturesStubbed;
const stubTextures = () => ({
  name: "kimodo_stub_textures",
  loadTexture() {
    texturesStubbed += 1;
    return Promise.resolve(new THREE.Texture());
  },
});

export function parse(bytes) {
  const loader = new GLTFLoader();
  loader.register(stubTextures);
  loader.setMeshoptDecoder(MeshoptDecoder);
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  return new Promise((resolve, reject) => loader.parse(buffer, "", resolve, reject));
}
