# Sourced by scripts/build.sh and scripts/fuzz.sh (from the source root): the
# compiler cache (CMakeLists.txt uses ccache where installed) takes paths
# relative to the source tree and does not hash the build directory, so every
# clone and tree of the same sources hits the same entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
