// Khronos glTF Validator on each file named on the command line; prints one JSON report per line.
const fs = require("fs");
const path = require("path");
const validator = require("gltf-validator");

async function main() {
  for (const file of process.argv.slice(2)) {
    const report = await validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {
      uri: path.basename(file),
      maxIssues: 200,
    });
    console.log(JSON.stringify({ file, issues: report.issues }));
  }
}
main().catch((error) => { console.error(error); process.exit(1); });
