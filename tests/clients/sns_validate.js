// AWS's own SNS message validator (npm `sns-validator`, Apache-2.0), as the independent check of
// the SNS messages tests/clients/sns_client.py signs: reads a JSON array of messages on stdin and
// prints a JSON array saying which of them it finds validly signed. Certificates are trusted from the
// host pattern given as the first argument (a regular expression; AWS's own by default).
const MessageValidator = require("sns-validator");

const pattern = process.argv[2] ? new RegExp(process.argv[2]) : undefined;
const validator = new MessageValidator(pattern);
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const messages = JSON.parse(input);
  const results = [];
  for (const message of messages) {
    results.push(await new Promise((resolve) => validator.validate(message, (error) => resolve(!error))));
  }
  console.log(JSON.stringify(results));
});
