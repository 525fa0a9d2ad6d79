// The part of the WebAssembly JavaScript API the sandbox uses: the project compiles against
// ES2023 without the DOM library, which is where TypeScript declares it.
declare global {
  namespace WebAssembly {
    class Module {
      private constructor()
    }
    class Memory {
      private constructor()
      readonly buffer: ArrayBuffer
    }
    interface Instance {
      readonly exports: Record<string, unknown>
    }
    function compile(bytes: Uint8Array): Promise<Module>
    function instantiate(module: Module, imports: Record<string, Record<string, unknown>>): Promise<Instance>
  }
}
export {}
