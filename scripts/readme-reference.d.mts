// Types of scripts/readme-reference.mjs, for the tests that import it.

export interface ActionEntry {
  readonly name: string
  readonly description: string
  readonly default: string | undefined
  readonly required: boolean
}

export interface ActionReference {
  readonly inputs: readonly ActionEntry[]
  readonly outputs: readonly ActionEntry[]
}

export type Section = 'inputs' | 'outputs'

export const SECTIONS: readonly Section[]
export function readAction(text: string): ActionReference
export function renderSection(section: Section, action: ActionReference): string
export function updateReadme(readme: string, actionText: string): string
