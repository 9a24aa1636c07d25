// three.js as a judge: load a .glb with three's own GLTFLoader, play its first animation with AnimationMixer and
// print, as one JSON line, what three built and every skin joint's world position at each requested frame.
//   node three_pose.mjs FILE.glb FPS FRAME [FRAME ...]
// three is found in $KIMODO_NODE_MODULES (else node_modules beside this script): ES modules ignore NODE_PATH.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.KIMODO_NODE_MODULES || path.join(here, "node_modules");
const THREE = await import(pathToFileURL(path.join(modules, "three", "build", "three.module.js")).href);
const { GLTFLoader } = await import(
  pathToFileURL(path.join(modules, "three", "examples", "jsm", "loaders", "GLTFLoader.js")).href
);

// Whatever three says while loading is part of the verdict, so it is collected, not lost in stderr.
const messages = [];
for (const level of ["warn", "error"]) {
  console[level] = (...parts) => messages.push(level + ": " + parts.map(String).join(" "));
}

// GLTFLoader's image path needs a browser (self.URL, an image decoder): in Node it throws "self is not defined"
// on the first image. Textures become empty Texture objects (counted); bones and geometry load as in a browser.
let texturesStubbed = 0;
const stubTextures = () => ({
  name: "kimodo_stub_textures",
  loadTexture() {
    texturesStubbed += 1;
    return Promise.resolve(new THREE.Texture());
  },
});

function parse(bytes) {
  const loader = new GLTFLoader();
  loader.register(stubTextures);
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  return new Promise((resolve, reject) => loader.parse(buffer, "", resolve, reject));
}

function nodeIndex(parser, object) {
  const mapping = parser.associations.get(object);
  return mapping && mapping.nodes !== undefined ? mapping.nodes : null;
}

async function main() {
  const [file, fpsText, ...frameTexts] = process.argv.slice(2);
  const fps = Number(fpsText);
  const frames = frameTexts.map(Number);
  const gltf = await parse(fs.readFileSync(file));
  const scene = gltf.scene;

  let meshes = 0;
  let skinnedMeshes = 0;
  let skinnedVertices = 0;
  const skeletons = new Set(); // distinct bone lists: glTF skins over the same joints count once
  const bones = new Map(); // bone object -> glTF node index, every bone of every skinned mesh
  scene.traverse((object) => {
    if (object.isMesh) meshes += 1;
    if (!object.isSkinnedMesh) return;
    skinnedMeshes += 1;
    skinnedVertices += object.geometry.attributes.position.count;
    skeletons.add(object.skeleton.bones.map((bone) => bone.uuid).join(","));
    for (const bone of object.skeleton.bones) bones.set(bone, nodeIndex(gltf.parser, bone));
  });

  const clip = gltf.animations[0];
  const tracks = clip
    ? clip.tracks.map((track) => {
        const binding = THREE.PropertyBinding.parseTrackName(track.name);
        const target = THREE.PropertyBinding.findNode(scene, binding.nodeName);
        return {
          name: track.name,
          node: target ? nodeIndex(gltf.parser, target) : null,
          property: binding.propertyName,
          keys: track.times.length,
        };
      })
    : [];

  const poses = [];
  if (clip) {
    const mixer = new THREE.AnimationMixer(scene);
    const action = mixer.clipAction(clip);
    action.setLoop(THREE.LoopOnce); // a repeating action wraps a time at the clip's end back to its start
    action.clampWhenFinished = true;
    action.play();
    for (const frame of frames) {
      mixer.setTime(frame / fps);
      scene.updateMatrixWorld(true);
      const joints = {};
      for (const [bone, node] of bones) {
        const p = new THREE.Vector3().setFromMatrixPosition(bone.matrixWorld);
        joints[node] = { name: bone.name, position: [p.x, p.y, p.z] };
      }
      poses.push({ frame, time: frame / fps, joints });
    }
  }

  console.log(
    JSON.stringify({
      three: THREE.REVISION,
      meshes,
      skinned_meshes: skinnedMeshes,
      skinned_vertices: skinnedVertices,
      skins: skeletons.size,
      animations: gltf.animations.length,
      duration: clip ? clip.duration : 0,
      track_count: tracks.length,
      tracks,
      textures_stubbed: texturesStubbed,
      messages,
      poses,
    })
  );
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
