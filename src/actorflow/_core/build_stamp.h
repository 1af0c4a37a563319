#ifndef AF_BUILD_STAMP_H
#define AF_BUILD_STAMP_H
/* The build stamp of a compiled module (build_stamp.py): setup.py compiles every module
 * with `-include build_stamp.h -DAF_BUILD_STAMP="<module>:<sha256 of its sources>"`, and
 * the loader reads the string back from the module's file before importing it.  A module
 * built any other way carries no stamp and is refused (the Python core runs instead). */
#ifdef AF_BUILD_STAMP
__attribute__((used)) static const char af_build_stamp[] =
    "actorflow-build-stamp:" AF_BUILD_STAMP;
#endif
/* a sanitizer build says so: the loader refuses (rather than crash on) an ASan module in a
 * process that did not preload ASan's runtime */
#ifdef AF_BUILD_SANITIZE
__attribute__((used)) static const char af_build_sanitize[] =
    "actorflow-build-sanitize:" AF_BUILD_SANITIZE;
#endif
#endif
