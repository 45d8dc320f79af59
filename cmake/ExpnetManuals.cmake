# Man pages and bash completion, generated at build time from the built programs
# (help2man reads their --help; `expnet completion bash` walks the CLI11 tree),
# so they always match the options the programs have.
#   ${CMAKE_BINARY_DIR}/man/expnet.1[.gz], expnet-studio.1[.gz]
#   ${CMAKE_BINARY_DIR}/completion/expnet
include(GNUInstallDirs)

set(EXPNET_MAN_DIR ${CMAKE_BINARY_DIR}/man)
set(EXPNET_COMPLETION_DIR ${CMAKE_BINARY_DIR}/completion)
set(EXPNET_MAN_INCLUDES ${PROJECT_SOURCE_DIR}/resources/man)
set(expnet_manual_outputs ${EXPNET_COMPLETION_DIR}/expnet)

# Written to a temporary file first: a failed run must not leave a truncated
# script that the next build takes as up to date.
add_custom_command(
  OUTPUT ${EXPNET_COMPLETION_DIR}/expnet
  COMMAND ${CMAKE_COMMAND} -E make_directory ${EXPNET_COMPLETION_DIR}
  COMMAND $<TARGET_FILE:expnet> completion bash > ${EXPNET_COMPLETION_DIR}/expnet.tmp
  COMMAND ${CMAKE_COMMAND} -E rename ${EXPNET_COMPLETION_DIR}/expnet.tmp ${EXPNET_COMPLETION_DIR}/expnet
  DEPENDS expnet
  COMMENT "Generating the bash completion of expnet"
  VERBATIM)
install(FILES ${EXPNET_COMPLETION_DIR}/expnet DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

find_program(HELP2MAN_EXECUTABLE help2man)
find_program(GZIP_EXECUTABLE gzip)
if(HELP2MAN_EXECUTABLE AND GZIP_EXECUTABLE)
  # expnet_man_page(PROGRAM SUMMARY): PROGRAM.1 and PROGRAM.1.gz (gzip -9n:
  # no name or time stamp in the archive, as Debian wants), with
  # resources/man/PROGRAM.h2m for the sections --help does not have.
  function(expnet_man_page program summary)
    set(page ${EXPNET_MAN_DIR}/${program}.1)
    set(include_file ${EXPNET_MAN_INCLUDES}/${program}.h2m)
    # --version-string: `--version` output names this machine's device and
    # threads, which has no place in a man page. Offscreen: the studio's --help
    # builds a QApplication, which needs no display that way.
    add_custom_command(
      OUTPUT ${page} ${page}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${EXPNET_MAN_DIR}
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
              ${HELP2MAN_EXECUTABLE} --no-info --version-string=${PROJECT_VERSION} --name=${summary}
              --include=${include_file} --output=${page} $<TARGET_FILE:${program}>
      COMMAND ${GZIP_EXECUTABLE} -9n -c ${page} > ${page}.gz
      DEPENDS ${program} ${include_file}
      COMMENT "Generating the man page ${program}(1) with help2man"
      VERBATIM)
    install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
    set(expnet_manual_outputs ${expnet_manual_outputs} ${page} ${page}.gz PARENT_SCOPE)
  endfunction()

  expnet_man_page(expnet "ExpansionNet v2 image captioning engine (command line)")
  if(EXPNET_BUILD_GUI)
    expnet_man_page(expnet-studio "ExpansionNet Studio, the image captioning workbench")
  endif()
else()
  message(STATUS "help2man or gzip not found: man pages are not built (packaging/install-deps.sh installs help2man)")
endif()

add_custom_target(expnet_manuals ALL DEPENDS ${expnet_manual_outputs})
add_dependencies(expnet_manuals expnet)
if(EXPNET_BUILD_GUI)
  add_dependencies(expnet_manuals expnet-studio)
endif()
