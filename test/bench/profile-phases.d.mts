/** Types of profile-phases.mjs: a paid call's CPU profile by phase of the call. */
import type { CpuProfile } from "./profile-attribution.mjs";

export interface Phase {
  key: string;
  label: string;
  /** Sites (`engine/journal/sqlite:update`, `package zod:parse`) that name the phase. */
  sites: RegExp[];
}
export interface PhaseAttribution {
  /** Milliseconds of samples, idle left out. */
  busyMs: number;
  /** [phase label, ms], most first; every phase of the table. */
  phases: [string, number][];
  /** [group, ms] of the samples no phase names, most first. */
  unattributed: [string, number][];
}
export const CALL_PHASES: Phase[];
export function siteOf(callFrame: { functionName: string; url: string }): string | undefined;
export function phaseOf(sites: (string | undefined)[], table?: Phase[]): Phase | undefined;
export function attributePhases(profile: CpuProfile, table?: Phase[]): PhaseAttribution;
