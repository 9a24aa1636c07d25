// three.js as a judge of feet and floor in retargeted .glb files: three's own GLTFLoader reads each file,
// AnimationMixer poses it at every frame, and SkinnedMesh.getVertexPosition (three's applyBoneTransform: linear
// blend skinning with three's bones and bind matrices) places the foot vertices. Nothing here is kimodo_rig's.
//   node feet_judge.mjs SPEC.json OUT.json
// SPEC is the list of cases tests/blender/feet_judge.py reads; bones are named by their glTF node names (three
// renames some: `mixamorig:Hips` becomes `mixamorigHips`; the loader's associations give back the node). For each
// case, from the INPUT character as its file stores it (the test rigs are saved at bind; no animation is played):
// the foot vertices (carried at least half by the foot bone and the bones under it; all of a rigid mesh, one with no
// skin, on the foot's node or a node under it: Kenney's block characters), foot, toe and `points` bones,
// the mesh's height. From the OUTPUT at every frame: each foot's lowest vertex height, its front sole vertex
// (chosen on the input at rest along the case's `forward`: soleFront), the position of every bone in `points` and of
// every `carried` point (fixed in a bone's frame: a dropped hand), and the lowest vertex of each of the `hands`
// (the hand bone and everything under it).
import fs from "node:fs";

import { THREE, messages, parse as parseBytes } from "./three_gltf.mjs";

const parse = (file) => parseBytes(fs.readFileSync(file));

function load(gltf) {
  const scene = gltf.scene;
  const byName = new Map(); // glTF node name -> three object
  const meshes = [];
  scene.traverse((object) => {
    const mapping = gltf.parser.associations.get(object);
    if (mapping && mapping.nodes !== undefined && !byName.has(gltf.parser.json.nodes[mapping.nodes].name)) {
      byName.set(gltf.parser.json.nodes[mapping.nodes].name, object);
    }
    if (object.isMesh) meshes.push(object); // skinned or rigid (a mesh on a node, moved by that node alone)
  });
  return { scene, byName, meshes };
}

function verticesUnder(character, topName) {
  // Per mesh: the indices of the vertices a bone (a foot, a hand) and everything under it carry.
  const top = character.byName.get(topName);
  if (!top) throw new Error("no node named " + topName);
  const under = new Set();
  top.traverse((object) => under.add(object));
  return character.meshes.map((mesh) => {
    if (!mesh.isSkinnedMesh) return under.has(mesh) ? [...Array(mesh.geometry.attributes.position.count).keys()] : [];
    const index = mesh.geometry.attributes.skinIndex;
    const weight = mesh.geometry.attributes.skinWeight;
    const picked = [];
    for (let i = 0; i < index.count; i += 1) {
      let total = 0;
      let carried = 0;
      for (let k = 0; k < index.itemSize; k += 1) {
        const w = weight.getComponent(i, k);
        total += w;
        if (under.has(mesh.skeleton.bones[index.getComponent(i, k)])) carried += w;
      }
      if (total > 0 && carried >= 0.5 * total) picked.push(i);
    }
    return picked;
  });
}

function skinned(mesh, i) {
  const v = new THREE.Vector3();
  mesh.getVertexPosition(i, v); // skinned: three's applyBoneTransform, in the mesh's space; rigid: as stored
  return v.applyMatrix4(mesh.matrixWorld);
}

function position(object) {
  const p = new THREE.Vector3().setFromMatrixPosition(object.matrixWorld);
  return [p.x, p.y, p.z];
}

async function rest(item) {
  const character = load(await parse(item.rig));
  character.scene.updateMatrixWorld(true);
  let low = Infinity;
  let high = -Infinity;
  for (const mesh of character.meshes) {
    for (let i = 0; i < mesh.geometry.attributes.position.count; i += 1) {
      const y = skinned(mesh, i).y;
      low = Math.min(low, y);
      high = Math.max(high, y);
    }
  }
  const feet = {};
  for (const [side, footName] of Object.entries(item.feet)) {
    const picked = verticesUnder(character, footName);
    const vertices = [];
    character.meshes.forEach((mesh, m) => picked[m].forEach((i) => vertices.push(skinned(mesh, i).toArray())));
    const toe = item.toes[side];
    feet[side] = { vertices, heel: position(character.byName.get(footName)), toe: toe ? position(character.byName.get(toe)) : null };
  }
  const points = {};
  for (const name of item.points) points[name] = position(character.byName.get(name));
  const carried = {}; // a point fixed in a bone's frame: where it sits in the bone's rest frame
  for (const [name, { bone, at }] of Object.entries(item.carried || {})) {
    const inverse = character.byName.get(bone).matrixWorld.clone().invert();
    carried[name] = new THREE.Vector3(...at).applyMatrix4(inverse).toArray();
  }
  return { height: high - low, feet, points, carried, meshes: character.meshes.length };
}

function soleFront(foot, ankle, forward, soleTop) {
  // The sole's front vertex, where a toe contact is measured without a toe bone: of the sole (no higher than
  // soleTop), the vertex a foot pitched toe-down stands on, along `forward` (the facing the rig was built
  // with): reach ahead of the ankle, less its height over the sole (a 45 deg pitch) and a tenth of its distance
  // aside from the ankle's line. Not the vertex farthest from the ankle: on a foot whose mesh hangs behind the
  // ankle that is the heel's back.
  const size = Math.hypot(forward[0], forward[2]);
  const [fx, fz] = [forward[0] / size, forward[2] / size];
  const low = Math.min(...foot.map((v) => v.y));
  let front = -1;
  let best = -Infinity;
  foot.forEach((v, k) => {
    const [dx, dz] = [v.x - ankle.x, v.z - ankle.z];
    const score = dx * fx + dz * fz - (v.y - low) - 0.1 * Math.abs(dx * fz - dz * fx);
    if (v.y <= soleTop && score > best) [front, best] = [k, score];
  });
  return front;
}

function frontsAtRest(item, rest) {
  // Per side, the sole's front vertex chosen on the INPUT character at rest (its foot vertices, in the order the
  // output's are read: the same meshes), so the same vertex is followed whatever the first frame does.
  const chosen = {};
  for (const [side, foot] of Object.entries(rest.feet)) {
    const vertices = foot.vertices.map((v) => new THREE.Vector3(...v));
    const [x, y, z] = foot.heel;
    const low = Math.min(...vertices.map((v) => v.y));
    chosen[side] = soleFront(vertices, new THREE.Vector3(x, y, z), item.forward || [0, 0, 1], low + 0.02 * rest.height);
  }
  return chosen;
}

async function output(item, rest) {
  const gltf = await parse(item.output);
  const character = load(gltf);
  const clip = gltf.animations[0];
  const mixer = new THREE.AnimationMixer(character.scene);
  const action = mixer.clipAction(clip);
  action.setLoop(THREE.LoopOnce); // a repeating action wraps the clip's end back to its start
  action.clampWhenFinished = true;
  action.play();
  const picked = {};
  for (const [side, footName] of Object.entries(item.feet)) picked[side] = verticesUnder(character, footName);
  const lowest = {};
  const front = {};
  const chosen = frontsAtRest(item, rest); // per side: the sole's front vertex
  const points = {};
  for (const name of [...item.points, ...Object.keys(rest.carried)]) points[name] = [];
  for (const side of Object.keys(picked)) {
    lowest[side] = [];
    front[side] = [];
  }
  const hands = {};
  const handLowest = {};
  for (const [side, handName] of Object.entries(item.hands || {})) {
    hands[side] = verticesUnder(character, handName);
    handLowest[side] = [];
  }
  for (let frame = 0; frame < item.frames; frame += 1) {
    mixer.setTime(frame / item.fps);
    character.scene.updateMatrixWorld(true);
    for (const name of item.points) points[name].push(position(character.byName.get(name)));
    for (const [name, local] of Object.entries(rest.carried)) {
      const bone = character.byName.get(item.carried[name].bone);
      points[name].push(new THREE.Vector3(...local).applyMatrix4(bone.matrixWorld).toArray());
    }
    for (const [side, perMesh] of Object.entries(picked)) {
      const foot = [];
      character.meshes.forEach((mesh, m) => perMesh[m].forEach((i) => foot.push(skinned(mesh, i))));
      const low = Math.min(...foot.map((v) => v.y));
      lowest[side].push(low);
      if (foot.length !== rest.feet[side].vertices.length) throw new Error(item.output + ": the output's foot has other vertices than the rig's");
      front[side].push(foot[chosen[side]].toArray());
    }
    for (const [side, perMesh] of Object.entries(hands)) {
      let low = Infinity;
      character.meshes.forEach((mesh, m) => perMesh[m].forEach((i) => (low = Math.min(low, skinned(mesh, i).y))));
      handLowest[side].push(low);
    }
  }
  return { lowest, front, points, hand_lowest: handLowest, meshes: character.meshes.length, duration: clip.duration, has_action: true };
}

async function main() {
  const [specFile, outFile] = process.argv.slice(2);
  const results = {};
  const rests = new Map();
  for (const item of JSON.parse(fs.readFileSync(specFile, "utf8"))) {
    const key = JSON.stringify([item.rig, item.feet, item.toes, item.points, item.carried]);
    if (!rests.has(key)) rests.set(key, await rest(item)); // several outputs of one character: its rest is read once
    const restReport = rests.get(key);
    results[item.name] = { rest: restReport, output: await output(item, restReport) };
  }
  fs.writeFileSync(outFile, JSON.stringify({ cases: results, messages }));
  console.log(JSON.stringify({ cases: Object.keys(results).length, messages: messages.length }));
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
