# The .deb package (issue 29): `cmake --build BUILD --target package` makes
# expnet-studio_<version>_<arch>.deb with CPack's DEB generator; packaging/deb.sh
# builds it from a clean folder and checks it, tests/package/ checks it in CTest.
# Install rules here are the desktop integration; the programs, demo models, man
# pages and completion have theirs beside their targets.
include(GNUInstallDirs)

set(EXPNET_MAINTAINER "ExpansionNet Studio maintainers <expnet-studio@users.noreply.github.com>"
  CACHE STRING "Maintainer field of the .deb and of its changelog (Name <email>)")
# No public address of this project is known to the source tree: set one to fill
# the package's Homepage field.
set(EXPNET_HOMEPAGE "" CACHE STRING "Homepage field of the .deb (empty: none)")

# Desktop entry, AppStream metainfo, icon -----------------------------------
# Only with the studio: a CLI-only build (EXPNET_BUILD_GUI=OFF) has no window to launch.
if(EXPNET_BUILD_GUI)
  set(EXPNET_APPSTREAM_ID io.github.expnet.studio)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/expnet-studio.desktop
    DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/${EXPNET_APPSTREAM_ID}.metainfo.xml
    DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/expnet-studio.svg
    DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)

  # PNG sizes for menus and docks that do not draw SVG: rendered from the one SVG
  # at build time (librsvg2-bin, installed by packaging/install-deps.sh), so no
  # binary copy of the icon is kept in the repository.
  find_program(EXPNET_RSVG_CONVERT rsvg-convert)
  set(EXPNET_ICON_SIZES 16 22 24 32 48 64 128 256)
  if(EXPNET_RSVG_CONVERT)
    set(icon_pngs)
    foreach(size ${EXPNET_ICON_SIZES})
      set(png ${CMAKE_BINARY_DIR}/icons/${size}x${size}/apps/expnet-studio.png)
      add_custom_command(OUTPUT ${png}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/icons/${size}x${size}/apps
        COMMAND ${EXPNET_RSVG_CONVERT} -w ${size} -h ${size} -o ${png} ${PROJECT_SOURCE_DIR}/resources/icons/expnet-studio.svg
        DEPENDS ${PROJECT_SOURCE_DIR}/resources/icons/expnet-studio.svg
        COMMENT "Rendering the ${size}x${size} icon" VERBATIM)
      list(APPEND icon_pngs ${png})
      install(FILES ${png} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
    endforeach()
    add_custom_target(expnet_icons ALL DEPENDS ${icon_pngs})
  else()
    message(WARNING "rsvg-convert not found: the package gets only the SVG icon, no PNG sizes. "
                    "Install librsvg2-bin (packaging/install-deps.sh) and configure again.")
  endif()
endif()

# Debian policy files: copyright and changelog ------------------------------
# lintian errors without them. Native package (no Debian revision), hence
# changelog.gz, compressed with -n so the package does not change with the clock.
set(doc_dir ${CMAKE_INSTALL_DATADIR}/doc/expnet-studio)
set(EXPNET_DEB_STAGE ${CMAKE_BINARY_DIR}/packaging)
file(WRITE ${EXPNET_DEB_STAGE}/copyright
"ExpansionNet Studio: a desktop workbench and command-line engine for image
captioning with ExpansionNet v2 (Hu, Cavicchioli, Capotondi: arXiv:2208.06551).

Copyright (C) 2026 the ExpansionNet Studio authors.

The source tree states no licence of its own; ask the maintainers
(${EXPNET_MAINTAINER}) before redistributing this package.

The built-in demo models (/usr/share/expnet/demo) were trained by this
project's own recipe on its generated shapes set (see README.md of the sources).
")
file(WRITE ${EXPNET_DEB_STAGE}/changelog
"expnet-studio (${PROJECT_VERSION}) unstable; urgency=medium

  * Package the studio, the expnet command line and the demo models.

 -- ${EXPNET_MAINTAINER}  Thu, 26 Nov 2026 00:00:00 +0000
")
find_program(EXPNET_GZIP gzip REQUIRED)
execute_process(COMMAND ${EXPNET_GZIP} -9nf ${EXPNET_DEB_STAGE}/changelog RESULT_VARIABLE gzip_rc)
if(NOT gzip_rc EQUAL 0)
  message(FATAL_ERROR "gzip -9n of ${EXPNET_DEB_STAGE}/changelog failed (${gzip_rc}): check the build folder is writable")
endif()
install(FILES ${EXPNET_DEB_STAGE}/copyright ${EXPNET_DEB_STAGE}/changelog.gz DESTINATION ${doc_dir})

# CPack -----------------------------------------------------------------------
if(NOT EXISTS ${PROJECT_SOURCE_DIR}/resources/demo/demo_model.pth)
  message(WARNING "resources/demo/demo_model.pth is missing: a package built now has no demo model "
                  "(packaging/deb.sh refuses it). Restore the file (README: The demo model).")
endif()
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME expnet-studio)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ExpansionNet Studio")
set(CPACK_PACKAGE_CONTACT "${EXPNET_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR})
set(CPACK_STRIP_FILES ON)  # Release binaries carry symbols: 3x the size, and a lintian warning
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "image captioning workbench for ExpansionNet v2")
# CPack puts the summary first and indents these lines itself (an empty line
# becomes " ."): plain paragraphs here.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "A Qt desktop studio (expnet-studio) and a command-line engine (expnet) for
image captioning with the ExpansionNet v2 model on LibTorch: caption images,
train and watch training live, see where the model looks (cross-attention),
browse caption datasets and compare decoding strategies.

A small demo model that describes coloured shapes is included; for photos,
load the authors' released COCO checkpoint.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${EXPNET_MAINTAINER}")
if(EXPNET_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${EXPNET_HOMEPAGE}")
endif()
# Depends from the binaries' libraries, plus the threaded OpenBLAS: LibTorch
# runs on the reference BLAS without it, and a caption takes a minute.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-pthread")
include(CPack)
