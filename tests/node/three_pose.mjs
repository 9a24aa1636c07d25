// three.js as a judge: load a .glb with three's own GLTFLoader, play its first animation with AnimationMixer and
// print, as one JSON line, what three built and every skin joint's world position at each requested frame.
//   node three_pose.mjs FILE.glb FPS FRAME [FRAME ...]
// three is loaded by three_gltf.mjs.
import fs from "node:fs";

import { THREE, messages, parse, stubbedTextures } from "./three_gltf.mjs";

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
      textures_stubbed: stubbedTextures(),
      messages,
      poses,
    })
  );
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
