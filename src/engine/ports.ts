// The ports every engine and mode is written against: time and a log. Tests pass fakes.

export interface Clock {
  now(): number
  sleep(ms: number): Promise<void>
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}

export interface Logger {
  info(message: string): void
  warning(message: string): void
}
