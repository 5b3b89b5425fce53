/* SwiftPM wants a source file in a C target; the functions are in libmpudp_ffi. */
