/** Types of profile-attribution.mjs: where a V8 CPU profile's time went. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}
export interface Attribution {
  /** Milliseconds of samples, idle left out. */
  busyMs: number;
  /** [group, ms], most first. */
  groups: [string, number][];
  functions: [string, number][];
  oursInclusive: [string, number][];
}
export function groupOfUrl(url: string): string;
export function attribute(profile: CpuProfile): Attribution;
