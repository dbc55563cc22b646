// Package testing is only a folder: its sub-packages are test
// infrastructure, never imported by product code (cmd/, engine/,
// controllers/, api/). envkubelet stands in for a kubelet on envtest,
// testserver runs the real summa-server binary for black-box tests,
// segtest builds segments for engine tests, s3test runs the real S3
// server (SeaweedFS) and fakefollower plays a follower's HTTP side.
package testing
