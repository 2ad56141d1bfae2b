// A Vercel AI SDK agent as its users write one: one tool, up to three steps, generateText or
// streamText, on @ai-sdk/openai (Responses or Chat Completions) or @ai-sdk/anthropic.
// Configured by the environment: AGENT_PROVIDER (responses | chat | anthropic), AGENT_MODE
// (generate | stream), AGENT_BASE_URL, AGENT_API_KEY, AGENT_MODEL, AGENT_PROMPT.
// Prints one JSON object: the final text, what the tool received, and (streamed) each text
// delta with the milliseconds since the start.
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";

const env = process.env;
const options = { baseURL: env.AGENT_BASE_URL, apiKey: env.AGENT_API_KEY };
const model = {
  responses: () => createOpenAI(options).responses(env.AGENT_MODEL),
  chat: () => createOpenAI(options).chat(env.AGENT_MODEL),
  anthropic: () => createAnthropic(options)(env.AGENT_MODEL),
}[env.AGENT_PROVIDER]();

const received = [];
const tools = {
  lookup_customer: tool({
    description: "Look a customer up by what the user said about them.",
    inputSchema: jsonSchema({
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    }),
    execute: async ({ text }) => {
      received.push(text);
      return `found the customer; their record says: ${text}`;
    },
  }),
};
const asked = { model, tools, stopWhen: stepCountIs(3), prompt: env.AGENT_PROMPT };
const started = Date.now();
let text;
const deltas = [];
if (env.AGENT_MODE === "stream") {
  const result = streamText(asked);
  for await (const part of result.fullStream) {
    if (part.type === "text-delta") deltas.push([Date.now() - started, part.text]);
    if (part.type === "error") throw part.error;
  }
  text = await result.text;
} else {
  text = (await generateText(asked)).text;
}
console.log(JSON.stringify({ text, received, deltas }));
