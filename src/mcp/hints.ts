/** What a human or agent can do about each refusal: the hint column of the engine's error table. */
export { hintFor } from "../engine/index.js";
