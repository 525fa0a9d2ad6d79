// bottleneck/light.js is the build without Redis (the one Octokit's plugins load); its types are the full build's.
declare module 'bottleneck/light.js' {
  import Bottleneck from 'bottleneck'
  export default Bottleneck
}
