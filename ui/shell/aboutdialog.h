// Help > About: the versions `expnet --version` prints (program, LibTorch,
// OpenCV, Qt, SQLite, from expnet::version_info()) and where the documentation is.
#pragma once

#include <QString>

class QWidget;

// The docs/ folder of the source tree the program was built in; empty when
// it is not found (an installed program).
QString documentationFolder();
// Rich text for the About box.
QString aboutText();
void showAboutDialog(QWidget* parent);
// Opens the docs/ folder in the desktop's file manager, or says where the documentation is.
void openDocumentation(QWidget* parent);
