# linerate_bpf_programs(APP <name> FOLDER <dir> [INCLUDES <dir>...] [STEER_HOOK <header>]
#                       [OUTPUT_DIR <dir>])
#
# Builds an app's XDP programs from its own folder: every <dir>/*.bpf.c becomes <name>.bpf.o
# (clang -target bpf) in OUTPUT_DIR (default: LINERATE_BPF_OUTPUT_DIR, the tree's bpf/ folder,
# where xdp::find_bpf_object looks; out of the tree, the calling folder's binary dir). The
# program includes what every program shares by its path under lib/ ("xdp/datapath/datapath.bpf.h",
# "pkt/frame_walk.h"; installed: include/linerate/) and its own headers from INCLUDES (an app in
# this tree: apps/, so "nfv/xdp/nfv_abi.h" reads as in C++). STEER_HOOK <header> also builds
# <name>_steer.bpf.o: the steering program (lib/xdp/steer/steer.bpf.c) with the app's hook
# compiled in (#include STEER_HOOK_HEADER; the header defines steer_hook, see steer.bpf.c), the
# one way an app adds per-frame logic to steering. A target <name>_bpf builds them all; in this
# tree linerate_bpf depends on it, and the objects are installed with the others.
#
# Both this tree (lib/xdp/CMakeLists.txt) and the installed package (linerateConfig.cmake) set
# LINERATE_BPF_CLANG, LINERATE_BPF_LIB_INCLUDE (lib/, or include/linerate) and
# LINERATE_BPF_STEER_SOURCE before including this file.
function(linerate_bpf_programs)
  cmake_parse_arguments(B "" "APP;FOLDER;STEER_HOOK;OUTPUT_DIR" "INCLUDES" ${ARGN})
  if(NOT B_APP OR NOT B_FOLDER)
    message(FATAL_ERROR "linerate_bpf_programs: APP and FOLDER are required")
  endif()
  if(NOT LINERATE_BPF_CLANG)
    message(WARNING "linerate: no clang, ${B_APP}'s XDP programs are not built")
    return()
  endif()
  get_filename_component(folder ${B_FOLDER} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  set(out ${B_OUTPUT_DIR})
  if(NOT out)
    set(out ${LINERATE_BPF_OUTPUT_DIR})
  endif()
  if(NOT out)
    set(out ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  # linux/types.h pulls asm/types.h from the multiarch include directory: the target's (in the
  # sysroot when cross-compiling; BPF objects are the same for every target).
  set(flags -target bpf -O2 -g -Wall -Werror -I${LINERATE_BPF_LIB_INCLUDE})
  foreach(dir IN LISTS B_INCLUDES)
    get_filename_component(dir ${dir} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND flags -I${dir})
  endforeach()
  if(CMAKE_LIBRARY_ARCHITECTURE)
    list(APPEND flags -idirafter ${CMAKE_SYSROOT}/usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
  endif()
  # Every header a program may include: its folder's and the shared ones.
  file(GLOB own_headers ${folder}/*.h)
  file(GLOB_RECURSE shared_headers ${LINERATE_BPF_LIB_INCLUDE}/xdp/*.h
       ${LINERATE_BPF_LIB_INCLUDE}/pkt/*.h ${LINERATE_BPF_LIB_INCLUDE}/stats/*.h)
  set(deps ${own_headers} ${shared_headers})
  file(GLOB sources ${folder}/*.bpf.c)
  set(objects)
  foreach(src IN LISTS sources)
    get_filename_component(name ${src} NAME_WE)
    set(obj ${out}/${name}.bpf.o)
    add_custom_command(OUTPUT ${obj}
                       COMMAND ${LINERATE_BPF_CLANG} ${flags} -c ${src} -o ${obj}
                       DEPENDS ${src} ${deps}
                       COMMENT "BPF object ${name}.bpf.o (${B_APP})"
                       VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  if(B_STEER_HOOK)
    set(obj ${out}/${B_APP}_steer.bpf.o)
    add_custom_command(OUTPUT ${obj}
                       COMMAND ${LINERATE_BPF_CLANG} ${flags}
                               "-DSTEER_HOOK_HEADER=\"${B_STEER_HOOK}\""
                               -c ${LINERATE_BPF_STEER_SOURCE} -o ${obj}
                       DEPENDS ${LINERATE_BPF_STEER_SOURCE} ${deps}
                       COMMENT "BPF object ${B_APP}_steer.bpf.o (steering, ${B_APP}'s hook)"
                       VERBATIM)
    list(APPEND objects ${obj})
  endif()
  add_custom_target(${B_APP}_bpf ALL DEPENDS ${objects})
  if(TARGET linerate_bpf)
    add_dependencies(linerate_bpf ${B_APP}_bpf)
  endif()
  if(LINERATE_BPF_INSTALL_DIR)
    install(FILES ${objects} DESTINATION ${LINERATE_BPF_INSTALL_DIR})
  endif()
endfunction()
